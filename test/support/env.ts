import { randomBytes } from "node:crypto";
import { loadConfig, type Config } from "@cm/config";

/** The server tests create their databases on; CI and developers have it locally. */
export const ADMIN_DATABASE_URL = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
export const ADMIN_DATABASE_PORT = Number(new URL(ADMIN_DATABASE_URL).port || 5432);
/**
 * TEST_REDIS=cluster: the services run on the Redis Cluster of TEST_REDIS_CLUSTER_NODES (by
 * default the three primaries scripts/redis-cluster.sh starts), with the intake spread over
 * TEST_INTAKE_QUEUE_SHARDS shards (3), as docs/operations-redis.md says ("The suite on a Redis
 * Cluster"); tests reach it through testRedis (redis.ts).
 */
export const REDIS_CLUSTER = process.env.TEST_REDIS === "cluster";
export const REDIS_CLUSTER_NODES =
  process.env.TEST_REDIS_CLUSTER_NODES ?? "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003";
/** On a cluster, one of its nodes: the processes read only its user, password and scheme. */
export const REDIS_URL =
  process.env.TEST_REDIS_URL ??
  (REDIS_CLUSTER ? `redis://${REDIS_CLUSTER_NODES.split(",")[0]}` : "redis://127.0.0.1:6379");
/**
 * Where the standalone test Redis listens (TEST_REDIS_URL's, or 6379): a proxy in front of it
 * dials there, in TEST_REDIS=cluster too, where the tests behind a proxy run on it alone.
 */
export const REDIS_PORT = Number(new URL(process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379").port || 6379);
/** The settings that put a process on the test cluster, in TEST_REDIS=cluster; none otherwise. */
export const REDIS_CLUSTER_ENV: Record<string, string> = REDIS_CLUSTER
  ? { REDIS_CLUSTER_NODES, INTAKE_QUEUE_SHARDS: process.env.TEST_INTAKE_QUEUE_SHARDS ?? "3" }
  : {};
/** The intake's shards in this test mode: testConfig's intakeQueueShards. */
export const TEST_SHARDS = Number(REDIS_CLUSTER_ENV.INTAKE_QUEUE_SHARDS ?? 1);

export function uniqueName(label: string): string {
  return `${label.replace(/[^a-z0-9]/gi, "_").toLowerCase()}_${randomBytes(4).toString("hex")}`;
}

/**
 * A configuration for one test file: its own database and its own queue prefix. A test that
 * names a Redis of its own (`redisUrl`, `redisSentinel`) gets it, not the test cluster, with the
 * intake still in this mode's shards.
 */
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
      // As npm start runs it: the intake log on.
      INTAKE_LOG_MAX_ENTRIES: "10000",
      ...REDIS_CLUSTER_ENV,
    }),
    ...(overrides.redisUrl === undefined && overrides.redisSentinel === undefined ? {} : { redisCluster: undefined }),
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
    ...(config.redisCluster === undefined
      ? {}
      : { REDIS_CLUSTER_NODES: config.redisCluster.nodes.map(({ host, port }) => `${host}:${port}`).join(",") }),
    INTAKE_QUEUE_SHARDS: String(config.intakeQueueShards),
    INTAKE_LOG_MAX_ENTRIES: String(config.intakeLog.maxEntries),
    ...extra,
  };
}
