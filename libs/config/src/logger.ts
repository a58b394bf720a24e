import pino, { type DestinationStream, type Logger } from "pino";
import type { LogLevel } from "./config";

/**
 * JSON lines, on stdout unless told otherwise. Credentials and emails are never passed to it;
 * these paths are masked in case one ever is.
 */
export function createLogger(name: string, level: LogLevel, destination?: DestinationStream): Logger {
  const options = {
    name,
    level,
    redact: { paths: ["*.auth_token", "*.authorization", "*.api_key", "*.email", "*.token"], censor: "[redacted]" },
  };
  return destination === undefined ? pino(options) : pino(options, destination);
}
