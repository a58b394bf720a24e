import type { Config } from "@cm/config";
import { connect } from "@cm/db";
import { consumerConnection } from "@cm/queue";
import type { Logger } from "pino";
import { identifyWorker } from "./queues/identify-worker";

export interface RunningWorker {
  /** Finishes (or hands back) the jobs in hand, then disconnects. */
  stop(): Promise<void>;
}

export async function startWorker(config: Config, logger: Logger): Promise<RunningWorker> {
  const sql = connect(config.databaseUrl, { max: config.workerConcurrency + 2, applicationName: "cm-worker" });
  const connection = consumerConnection(config.redisUrl);
  const identify = identifyWorker(config, connection, sql, logger);
  identify.on("failed", (job, error) =>
    logger.warn({ jobId: job?.id, attempts: job?.attemptsMade, err: error.message }, "identify job failed"),
  );
  identify.on("error", (error) => logger.warn({ err: error.message }, "identify worker error"));
  await identify.waitUntilReady();

  let stopping: Promise<void> | null = null;
  const stop = () => {
    stopping ??= (async () => {
      await identify.close();
      connection.disconnect();
      await sql.end({ timeout: 5 });
    })();
    return stopping;
  };
  return { stop };
}
