import { logThrottle, type Config } from "@cm/config";
import { connect } from "@cm/db";
import { isKnownOperation } from "@cm/domain";
import {
  cappedExponentialBackoff,
  checkRedisDurability,
  consumerConnection,
  EVENTS_QUEUE,
  EVENTS_READ,
  everyIntakeQueue,
  isCluster,
  PROFILE_OPERATIONS_QUEUE,
  intakeQueues,
  MAINTENANCE_QUEUE,
  operationsOf,
  PROFILE_OPERATIONS_READ,
  queueName,
  WEBHOOKS_QUEUE,
  TOPIC_FANOUT_KIND,
  TOPIC_FANOUT_QUEUE,
  type TopicFanoutJobData,
} from "@cm/queue";
import type { Worker } from "bullmq";
import type { Logger } from "pino";
import { startHealthServer } from "./health-server";
import { cachedProfileKeys, ensureUpcomingEventPartitions } from "@cm/app";
import { createWorkerMetrics } from "./metrics";
import { queueWorkers } from "./queues/create-queue-worker";
import { eventsProcessor } from "./queues/events-processor";
import { profileOperationsProcessor } from "./queues/profile-operations-processor";
import { forKnownKind } from "./queues/known-kind";
import { maintenanceWorker } from "./queues/maintenance-worker";
import { topicFanoutProcessor } from "./queues/topic-fanout-processor";
import { webhooksWorker } from "./queues/webhooks-worker";

/** Fan-outs are Postgres-bound; two at once keep one long fan-out from holding up every other topic. */
const FANOUT_CONCURRENCY = 2;

export interface RunningWorker {
  /** Where /healthz, /readyz and /metrics answer. */
  healthUrl: string;
  /** Turns not ready, finishes (or hands back) the jobs in hand, then disconnects. */
  stop(): Promise<void>;
}

/**
 * Jobs of each batch queue a process applies at once (WORKER_CONCURRENCY) are shared among the
 * queue's shards (INTAKE_QUEUE_SHARDS), so that the shards change the Redis layout, not the load on
 * Postgres: each shard's worker takes this many (one at least).
 */
export const shardConcurrency = (config: Pick<Config, "workerConcurrency" | "intakeQueueShards">): number =>
  Math.ceil(config.workerConcurrency / config.intakeQueueShards);

export async function startWorker(config: Config, logger: Logger): Promise<RunningWorker> {
  const connection = consumerConnection(config);
  const concurrency = shardConcurrency(config);
  await checkRedisDurability(connection, config.redisDurability, (message) => logger.warn(message)).catch(
    (error: unknown) => {
      connection.disconnect();
      throw error;
    },
  );
  const sql = connect(config.databaseUrl, {
    max: 2 * concurrency * config.intakeQueueShards + FANOUT_CONCURRENCY + 2,
    applicationName: "cm-worker",
    reconnectDelayMs: (failures) =>
      cappedExponentialBackoff(failures, config.jobRetryBaseDelayMs, config.jobRetryMaxDelayMs),
  });
  const metrics = createWorkerMetrics();
  const readiness = { accepting: true };
  const { createQueueWorker, workers, waitingOnRetry } = queueWorkers(connection, config, logger, metrics);
  const health = await startHealthServer(config.metricsPort, {
    sql,
    redis: connection,
    registry: metrics.registry,
    readiness,
    redisDurability: config.redisDurability,
    waitingOnRetry,
  });
  // Every shard of the batch queues: each has its worker, and erasures reach the operations and events of their failed jobs.
  const batchQueues = intakeQueues(connection, config.queuePrefix, config.intakeQueueShards);
  const everyBatchQueue = everyIntakeQueue(batchQueues);
  // Without a listener BullMQ prints a queue's errors to stderr whole, with the command's arguments.
  const logQueueError = logThrottle(10);
  for (const queue of everyBatchQueue)
    queue.on("error", (error) =>
      logQueueError((suppressed) => logger.warn({ err: error.message, suppressed }, `${queue.name} queue error`)),
    );
  const stores = {
    sql,
    ...batchQueues,
    profileKeys: cachedProfileKeys(sql),
    intakeLog: { redis: connection, prefix: config.queuePrefix },
  };
  const logLeftAlone = logThrottle(10);
  const leftAlone = (queue: string) => (kind: unknown, v: unknown, unknownItem?: string) => {
    metrics.jobsLeftAlone.inc({ queue });
    logLeftAlone((suppressed) =>
      logger.warn(
        { queue, kind: String(kind), v: String(v), unknownItem, suppressed },
        "job of an unknown kind or version left alone",
      ),
    );
  };
  // Events land in the day's partition; the maintenance job keeps making them ahead, this covers a fresh database.
  await ensureUpcomingEventPartitions(sql).catch((error: unknown) =>
    logger.warn({ err: error instanceof Error ? error.message : String(error) }, "event partitions not made at start"),
  );
  const applyProfileOperations = forKnownKind(
    PROFILE_OPERATIONS_READ,
    true,
    profileOperationsProcessor(stores, logger, metrics),
    leftAlone(PROFILE_OPERATIONS_QUEUE),
    (data) =>
      operationsOf(data)
        .filter((operation) => !isKnownOperation(operation))
        .map(({ op }) => String(op))[0],
  );
  const storeEvents = forKnownKind(
    EVENTS_READ,
    false,
    eventsProcessor(stores, logger, metrics),
    leftAlone(EVENTS_QUEUE),
  );
  // A worker for every shard of each batch queue: whichever shard a gateway wrote to, its jobs are taken.
  const batchWorkers = [
    ...batchQueues.profileOperationsQueues.map((queue) =>
      createQueueWorker(queue.name, applyProfileOperations, { concurrency, heldUnderWorkerLock: true }),
    ),
    ...batchQueues.eventsQueues.map((queue) =>
      createQueueWorker(queue.name, storeEvents, { concurrency, heldUnderWorkerLock: true }),
    ),
  ];
  const fanout: Worker<TopicFanoutJobData> = createQueueWorker(
    queueName(TOPIC_FANOUT_QUEUE, isCluster(connection)),
    forKnownKind(
      [TOPIC_FANOUT_KIND],
      true,
      topicFanoutProcessor(sql, logger, metrics, () => fanout.closing !== undefined),
      leftAlone(TOPIC_FANOUT_QUEUE),
    ),
    { concurrency: FANOUT_CONCURRENCY, heldUnderWorkerLock: true },
  );
  const maintenance = await maintenanceWorker(
    createQueueWorker,
    config,
    connection,
    sql,
    logger,
    leftAlone(MAINTENANCE_QUEUE),
  );
  const webhooks = await webhooksWorker(
    createQueueWorker,
    config,
    connection,
    logger,
    metrics,
    leftAlone(WEBHOOKS_QUEUE),
  );
  await Promise.all(workers.map((worker) => worker.waitUntilReady()));

  let stopping: Promise<void> | null = null;
  const stop = () => {
    stopping ??= (async () => {
      readiness.accepting = false;
      await Promise.all([
        ...batchWorkers.map((worker) => worker.close()),
        fanout.close(),
        maintenance.close(),
        webhooks.close(),
      ]);
      await Promise.all(everyBatchQueue.map((queue) => queue.close()));
      await new Promise((resolve) => health.server.close(resolve));
      connection.disconnect();
      await sql.end({ timeout: 5 });
    })();
    return stopping;
  };
  return { healthUrl: `http://127.0.0.1:${health.port}`, stop };
}
