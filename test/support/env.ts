import { randomBytes } from "node:crypto";
import { loadConfig, type Config } from "@cm/config";

/** The server tests create their databases on; CI and developers have it locally. */
export const ADMIN_DATABASE_URL = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
export const ADMIN_DATABASE_PORT = Number(new URL(ADMIN_DATABASE_URL).port || 5432);
export const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

export function uniqueName(label: string): string {
  return `${label.replace(/[^a-z0-9]/gi, "_").toLowerCase()}_${randomBytes(4).toString("hex")}`;
}

/** A configuration for one test file: its own database and its own queue prefix. */
export function testConfig(databaseUrl: string, queuePrefix: string, overrides: Partial<Config> = {}): Config {
  return {
    // The shared test Redis runs without persistence; tests of the durability check start their own.
    ...loadConfig({
      DATABASE_URL: databaseUrl,
      REDIS_URL,
      QUEUE_PREFIX: queuePrefix,
      PORT: "0",
      METRICS_PORT: "0",
      LOG_LEVEL: "debug",
      REDIS_DURABILITY: "warn",
    }),
    ...overrides,
  };
}

/** Environment for a child process (gateway, worker, ctl) started by a test. */
export function childEnv(config: Config, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    DATABASE_URL: config.databaseUrl,
    REDIS_URL: config.redisUrl,
    QUEUE_PREFIX: config.queuePrefix,
    PORT: String(config.port),
    METRICS_PORT: String(config.metricsPort),
    LOG_LEVEL: config.logLevel,
    REDIS_DURABILITY: config.redisDurability,
    ...extra,
  };
}
