import { createLogger, exitOnStartupFailure, loadConfig, stopOnSignals } from "@cm/config";
import { startWorker } from "./worker";

/** Longer than a job takes to apply, shorter than the pod's termination grace period. */
const STOP_TIMEOUT_MS = 50_000;

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger("worker", config.logLevel);
  for (const retired of config.retiredSettings) logger.warn(retired);
  const worker = await startWorker(config, logger);
  logger.info({ concurrency: config.workerConcurrency }, "worker started");
  stopOnSignals("worker", logger, worker.stop, STOP_TIMEOUT_MS);
}

main().catch(exitOnStartupFailure);
