import type { Config } from "@cm/config";
import { connect } from "@cm/db";
import { consumerConnection } from "@cm/queue";
import type { Logger } from "pino";
import { startHealthServer } from "./health-server";
import { createWorkerMetrics } from "./metrics";
import { identifyWorker } from "./queues/identify-worker";
import { FANOUT_CONCURRENCY, topicFanoutWorker } from "./queues/topic-fanout-worker";

export interface RunningWorker {
  /** Where /healthz, /readyz and /metrics answer. */
  healthUrl: string;
  /** Turns not ready, finishes (or hands back) the jobs in hand, then disconnects. */
  stop(): Promise<void>;
}

export async function startWorker(config: Config, logger: Logger): Promise<RunningWorker> {
  const sql = connect(config.databaseUrl, { max: config.workerConcurrency + FANOUT_CONCURRENCY + 2, applicationName: "cm-worker" });
  const connection = consumerConnection(config.redisUrl);
  const metrics = createWorkerMetrics();
  const readiness = { accepting: true };
  const health = await startHealthServer(config.metricsPort, { sql, redis: connection, registry: metrics.registry, readiness });
  const identify = identifyWorker(config, connection, sql, logger, metrics);
  identify.on("failed", (job, error) =>
    logger.warn({ jobId: job?.id, attempts: job?.attemptsMade, err: error.message }, "identify job failed"),
  );
  identify.on("error", (error) => logger.warn({ err: error.message }, "identify worker error"));
  await identify.waitUntilReady();
  const fanout = topicFanoutWorker(config, connection, sql, logger, metrics);
  fanout.on("failed", (job, error) =>
    logger.warn({ jobId: job?.id, attempts: job?.attemptsMade, err: error.message }, "topic fan-out job failed"),
  );
  fanout.on("error", (error) => logger.warn({ err: error.message }, "topic fan-out worker error"));
  await fanout.waitUntilReady();

  let stopping: Promise<void> | null = null;
  const stop = () => {
    stopping ??= (async () => {
      readiness.accepting = false;
      await Promise.all([identify.close(), fanout.close()]);
      await new Promise((resolve) => health.server.close(resolve));
      connection.disconnect();
      await sql.end({ timeout: 5 });
    })();
    return stopping;
  };
  return { healthUrl: `http://127.0.0.1:${health.port}`, stop };
}
