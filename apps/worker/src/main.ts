import { createLogger, loadConfig } from "@cm/config";
import { startWorker } from "./worker";

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger("worker", config.logLevel);
  const worker = await startWorker(config, logger);
  logger.info({ concurrency: config.workerConcurrency }, "worker started");

  const shutdown = (signal: string) => {
    logger.info({ signal }, "worker stopping");
    worker.stop().then(
      () => {
        logger.info("worker stopped");
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, "worker stopped with an error");
        process.exit(1);
      },
    );
  };
  process.once("SIGTERM", () => shutdown("SIGTERM"));
  process.once("SIGINT", () => shutdown("SIGINT"));
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
