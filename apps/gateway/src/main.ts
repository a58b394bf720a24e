import { createLogger, exitOnStartupFailure, loadConfig, stopOnSignals } from "@cm/config";
import { startGateway } from "./gateway";

/** Longest a stop may take once the shutdown delay is over; then the process exits anyway. */
const STOP_TIMEOUT_MS = 25_000;

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger("gateway", config.logLevel);
  for (const deprecated of config.deprecatedSettings) logger.warn(deprecated);
  const gateway = await startGateway(config, logger);
  logger.info({ url: gateway.url }, "gateway listening");
  stopOnSignals("gateway", logger, gateway.stop, config.shutdownDelayMs + STOP_TIMEOUT_MS);
}

main().catch(exitOnStartupFailure);
