import { createLogger, loadConfig } from "@cm/config";
import { startGateway } from "./gateway";

/** Longest a stop may take once the shutdown delay is over; then the process exits anyway. */
const SHUTDOWN_TIMEOUT_MS = 25_000;

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger("gateway", config.logLevel);
  const gateway = await startGateway(config, logger);
  logger.info({ url: gateway.url }, "gateway listening");

  const shutdown = (signal: string) => {
    logger.info({ signal }, "gateway stopping");
    setTimeout(() => {
      logger.error("gateway did not stop in time");
      process.exit(1);
    }, config.shutdownDelayMs + SHUTDOWN_TIMEOUT_MS).unref();
    gateway.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, "gateway stopped with an error");
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
