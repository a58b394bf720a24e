import type { Logger } from "pino";

/**
 * On SIGTERM or SIGINT, or once the parent that started it with an IPC channel is gone, stops the
 * service (once) and exits: 0 when it stopped cleanly, 1 when stopping failed or took longer than
 * `timeoutMs` (the orchestrator would kill it soon after anyway).
 */
export function stopOnSignals(name: string, logger: Logger, stop: () => Promise<void>, timeoutMs: number): void {
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
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
  // Started with an IPC channel (`npm start`'s launcher does): the channel closes when the parent
  // dies, even by SIGKILL, which sends no signal on; the process must not outlive it, holding the port.
  if (process.channel !== undefined) {
    process.channel.unref();
    process.once("disconnect", () => shutdown("parent gone"));
  }
}

/** A process that cannot start says why on stderr (the logger may not exist yet) and exits 1. */
export function exitOnStartupFailure(error: unknown): never {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
}
