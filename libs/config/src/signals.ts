import type { Logger } from "pino";

/**
 * On SIGTERM or SIGINT, stops the service and exits: 0 when it stopped cleanly, 1 when stopping
 * failed or took longer than `timeoutMs` (the orchestrator would kill it soon after anyway).
 */
export function stopOnSignals(name: string, logger: Logger, stop: () => Promise<void>, timeoutMs: number): void {
  const shutdown = (signal: string) => {
    logger.info({ signal }, `${name} stopping`);
    setTimeout(() => {
      logger.error(`${name} did not stop within ${timeoutMs} ms`);
      process.exit(1);
    }, timeoutMs).unref();
    stop().then(
      () => {
        logger.info(`${name} stopped`);
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, `${name} stopped with an error`);
        process.exit(1);
      },
    );
  };
  process.once("SIGTERM", () => shutdown("SIGTERM"));
  process.once("SIGINT", () => shutdown("SIGINT"));
}

/** A process that cannot start says why on stderr (the logger may not exist yet) and exits 1. */
export function exitOnStartupFailure(error: unknown): never {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
}
