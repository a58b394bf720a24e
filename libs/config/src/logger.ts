import pino, { type Logger } from "pino";
import type { LogLevel } from "./config";

/** JSON lines on stdout; credentials are never passed to it, and these paths are masked if they ever are. */
export function createLogger(name: string, level: LogLevel): Logger {
  return pino({
    name,
    level,
    redact: { paths: ["*.auth_token", "*.authorization", "*.api_key", "*.email", "*.token"], censor: "[redacted]" },
  });
}
