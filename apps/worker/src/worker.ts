import { logThrottle, type Config } from "@cm/config";
import { connect } from "@cm/db";
import { isKnownOperation } from "@cm/domain";
import {
  cappedExponentialBackoff,
  checkRedisDurability,
  consumerConnection,
  EVENTS_QUEUE,
  EVENTS_READ,
  eventsQueue,
  PROFILE_OPERATIONS_QUEUE,
  profileOperationsQueue,
  MAINTENANCE_QUEUE,
  operationsOf,
  PROFILE_OPERATIONS_READ,
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

export async function startWorker(config: Config, logger: Logger): Promise<RunningWorker> {
  const connection = consumerConnection(config);
  await checkRedisDurability(connection, config.redisDurability, (message) => logger.warn(message)).catch(
    (error: unknown) => {
      connection.disconnect();
      throw error;
    },
  );
  const sql = connect(config.databaseUrl, {
    max: 2 * config.workerConcurrency + FANOUT_CONCURRENCY + 2,
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
  // For erasures, which reach the operations and events of failed jobs too.
  const failedJobs = {
    profileOperationsQueue: profileOperationsQueue(connection, config.queuePrefix),
    eventsQueue: eventsQueue(connection, config.queuePrefix),
  };
  // Without a listener BullMQ prints a queue's errors to stderr whole, with the command's arguments.
  const logQueueError = logThrottle(10);
  for (const queue of Object.values(failedJobs))
    queue.on("error", (error) =>
      logQueueError((suppressed) => logger.warn({ err: error.message, suppressed }, `${queue.name} queue error`)),
    );
  const stores = { sql, ...failedJobs, profileKeys: cachedProfileKeys(sql) };
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
  const profileOperations = createQueueWorker(
    PROFILE_OPERATIONS_QUEUE,
    forKnownKind(
      PROFILE_OPERATIONS_READ,
      true,
      profileOperationsProcessor(stores, logger, metrics),
      leftAlone(PROFILE_OPERATIONS_QUEUE),
      (data) =>
        operationsOf(data)
          .filter((operation) => !isKnownOperation(operation))
          .map(({ op }) => String(op))[0],
    ),
    { concurrency: config.workerConcurrency, heldUnderWorkerLock: true },
  );
  const events = createQueueWorker(
    EVENTS_QUEUE,
    forKnownKind(EVENTS_READ, false, eventsProcessor(stores, logger, metrics), leftAlone(EVENTS_QUEUE)),
    { concurrency: config.workerConcurrency, heldUnderWorkerLock: true },
  );
  const fanout: Worker<TopicFanoutJobData> = createQueueWorker(
    TOPIC_FANOUT_QUEUE,
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
        profileOperations.close(),
        events.close(),
        fanout.close(),
        maintenance.close(),
        webhooks.close(),
      ]);
      await Promise.all(Object.values(failedJobs).map((queue) => queue.close()));
      await new Promise((resolve) => health.server.close(resolve));
      connection.disconnect();
      await sql.end({ timeout: 5 });
    })();
    return stopping;
  };
  return { healthUrl: `http://127.0.0.1:${health.port}`, stop };
}
