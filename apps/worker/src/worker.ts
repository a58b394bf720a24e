import { logThrottle, type Config } from "@cm/config";
import { connect } from "@cm/db";
import { checkRedisDurability, consumerConnection } from "@cm/queue";
import type { Worker } from "bullmq";
import type { Logger } from "pino";
import { startHealthServer } from "./health-server";
import { pauseWhileRedisIsFull } from "./redis-full-backoff";
import { createWorkerMetrics } from "./metrics";
import { identifyWorker } from "./queues/identify-worker";
import { maintenanceWorker } from "./queues/maintenance-worker";
import { FANOUT_CONCURRENCY, topicFanoutWorker } from "./queues/topic-fanout-worker";

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
  // Listeners go on each worker as it is made: one without an "error" listener has BullMQ print
  // its errors to stderr whole, with the command's arguments.
  const workers: Worker[] = [];
  const onRedisFull = pauseWhileRedisIsFull(workers, connection, logger);
  const watch = <W extends Worker>(name: string, worker: W): W => {
    const logFailed = logThrottle(10);
    const logError = logThrottle(10);
    worker.on("failed", (job, error) =>
      logFailed((suppressed) =>
        logger.warn(
          { jobId: job?.id, attempts: job?.attemptsMade, err: error.message, suppressed },
          `${name} job failed`,
        ),
      ),
    );
    worker.on("error", (error) => {
      onRedisFull(error);
      logError((suppressed) => logger.warn({ err: error.message, suppressed }, `${name} worker error`));
    });
    workers.push(worker);
    return worker;
  };
  const identify = watch("identify", identifyWorker(config, connection, sql, logger, metrics));
  const fanout = watch("topic fan-out", topicFanoutWorker(config, connection, sql, logger, metrics));
  const maintenance = await maintenanceWorker(config, connection, sql, logger);
  watch("maintenance", maintenance.worker);
  await Promise.all(workers.map((worker) => worker.waitUntilReady()));

  let stopping: Promise<void> | null = null;
  const stop = () => {
    stopping ??= (async () => {
      readiness.accepting = false;
      await Promise.all([identify.close(), fanout.close(), maintenance.close()]);
      await new Promise((resolve) => health.server.close(resolve));
      connection.disconnect();
      await sql.end({ timeout: 5 });
    })();
    return stopping;
  };
  return { healthUrl: `http://127.0.0.1:${health.port}`, stop };
}
