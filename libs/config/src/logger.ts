import pino, { type DestinationStream, type Logger } from "pino";
import type { LogLevel } from "./config";

/**
 * An error as a log line may show it: its kind, message, code and stack. Never its other
 * fields: an ioredis error carries the command's arguments (a whole micro-batch of profiles)
 * and a postgres.js error the query's parameters.
 */
export function loggableError(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { message: String(error) };
  const code = (error as { code?: unknown }).code;
  return { type: error.name, message: error.message, ...(code === undefined ? {} : { code }), stack: error.stack };
}

/**
 * JSON lines, on stdout unless told otherwise. Credentials and emails are never passed to it;
 * these paths are masked in case one ever is.
 */
export function createLogger(name: string, level: LogLevel, destination?: DestinationStream): Logger {
  const options = {
    name,
    level,
    serializers: { err: loggableError },
    redact: { paths: ["*.auth_token", "*.authorization", "*.api_key", "*.email", "*.token"], censor: "[redacted]" },
  };
  return destination === undefined ? pino(options) : pino(options, destination);
}
