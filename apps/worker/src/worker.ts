import { logThrottle, type Config } from "@cm/config";
import { connect } from "@cm/db";
import {
  checkRedisDurability,
  consumerConnection,
  IDENTIFY_QUEUE,
  identifyQueue,
  TOPIC_FANOUT_QUEUE,
  type TopicFanoutJobData,
} from "@cm/queue";
import type { Worker } from "bullmq";
import type { Logger } from "pino";
import { startHealthServer } from "./health-server";
import { createWorkerMetrics } from "./metrics";
import { queueWorkers } from "./queues/create-queue-worker";
import { identifyProcessor } from "./queues/identify-processor";
import { maintenanceWorker } from "./queues/maintenance-worker";
import { topicFanoutProcessor } from "./queues/topic-fanout-processor";

/** Fan-outs are Postgres-bound; two at once keep one long fan-out from holding up every other topic. */
const FANOUT_CONCURRENCY = 2;

export interface RunningWorker {
  /** Where /healthz, /readyz and /metrics answer. */
  healthUrl: string;
  /** Turns not ready, finishes (or hands back) the jobs in hand, then disconnects. */
  stop(): Promise<void>;
}

export async function startWorker(config: Config, logger: Logger): Promise<RunningWorker> {
  const connection = consumerConnection(config.redisUrl);
  await checkRedisDurability(connection, config.redisDurability, (message) => logger.warn(message)).catch(
    (error: unknown) => {
      connection.disconnect();
      throw error;
    },
  );
  const sql = connect(config.databaseUrl, {
    max: config.workerConcurrency + FANOUT_CONCURRENCY + 2,
    applicationName: "cm-worker",
  });
  const metrics = createWorkerMetrics();
  const readiness = { accepting: true };
  const health = await startHealthServer(config.metricsPort, {
    sql,
    redis: connection,
    registry: metrics.registry,
    readiness,
    redisDurability: config.redisDurability,
  });
  const { createQueueWorker, workers } = queueWorkers(connection, config, logger);
  // For erasures, which reach the operations of failed jobs too.
  const failedJobs = identifyQueue(connection, config.queuePrefix);
  // Without a listener BullMQ prints a queue's errors to stderr whole, with the command's arguments.
  const logQueueError = logThrottle(10);
  failedJobs.on("error", (error) =>
    logQueueError((suppressed) => logger.warn({ err: error.message, suppressed }, "identify queue error")),
  );
  const stores = { sql, identifyQueue: failedJobs };
  const identify = createQueueWorker(IDENTIFY_QUEUE, identifyProcessor(stores, logger, metrics), {
    concurrency: config.workerConcurrency,
    heldUnderWorkerLock: true,
  });
  const fanout: Worker<TopicFanoutJobData> = createQueueWorker(
    TOPIC_FANOUT_QUEUE,
    topicFanoutProcessor(sql, logger, metrics, () => fanout.closing !== undefined),
    { concurrency: FANOUT_CONCURRENCY, heldUnderWorkerLock: true },
  );
  const maintenance = await maintenanceWorker(createQueueWorker, config, connection, sql, logger);
  await Promise.all(workers.map((worker) => worker.waitUntilReady()));

  let stopping: Promise<void> | null = null;
  const stop = () => {
    stopping ??= (async () => {
      readiness.accepting = false;
      await Promise.all([identify.close(), fanout.close(), maintenance.close()]);
      await failedJobs.close();
      await new Promise((resolve) => health.server.close(resolve));
      connection.disconnect();
      await sql.end({ timeout: 5 });
    })();
    return stopping;
  };
  return { healthUrl: `http://127.0.0.1:${health.port}`, stop };
}
