import { readFileSync } from "node:fs";
import typia, { tags } from "typia";

export type LogLevel = "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";

/** Everything a process needs to start, read once from the environment and then passed in. */
export interface Config {
  databaseUrl: string & tags.Pattern<"^postgres(ql)?://">;
  /**
   * The Redis server; with `redisSentinel`, only its user, password, database and scheme (rediss:
   * TLS) are read, and the Sentinels say where the primary is.
   */
  redisUrl: string & tags.Pattern<"^rediss?://">;
  /** Where the Sentinels that watch the primary are (REDIS_SENTINELS); unset, REDIS_URL names the server. */
  redisSentinel?: RedisSentinelSettings;
  /**
   * Nodes of a Redis Cluster to learn the others from (REDIS_CLUSTER_NODES); unset, Redis is one
   * server (or one primary and its replicas). With it, REDIS_URL gives only the user, password and scheme.
   */
  redisCluster?: RedisClusterSettings;
  /** What a queued operation must reach before it is answered 200 (REDIS_REPLICAS_ACK). */
  redisReplicasAck: ReplicasAckSettings;
  /**
   * How long the gateway holds a queue write that failed because Redis is away or changing
   * primaries, trying it again, before its requests are answered 503 (REDIS_FAILOVER_HOLD_MS):
   * a failover that ends within it costs latency, not errors. 0: answered at once.
   */
  redisFailoverHoldMs: number & tags.Type<"uint32"> & tags.Maximum<60000>;
  port: number & tags.Type<"uint32"> & tags.Maximum<65535>;
  logLevel: LogLevel;
  /**
   * Whether a Redis that can lose accepted identifies (no AOF, an evicting maxmemory-policy)
   * stops gateways and workers from starting and being ready ("require"), or is only warned about.
   */
  redisDurability: "require" | "warn";
  /** BullMQ key prefix: lets several deployments (or test files) share one Redis. */
  queuePrefix: string & tags.MinLength<1> & tags.Pattern<"^[A-Za-z0-9_.-]+$">;
  /**
   * Queues the intake (profile operations, and tracked events) is spread over, a user's always
   * in the same one (INTAKE_QUEUE_SHARDS): on a Redis Cluster, so that it is spread over its nodes.
   */
  intakeQueueShards: number & tags.Type<"uint32"> & tags.Minimum<1> & tags.Maximum<64>;
  /** Guards the queue dashboard; unset means the dashboard refuses everyone. */
  adminToken?: string & tags.MinLength<16>;
  /** Requests a second per project, across all gateways (every endpoint); past it, 429. */
  rateLimitPerSecond: number & tags.Minimum<1>;
  /** Requests a project may send at once after a quiet spell. */
  rateLimitBurst: number & tags.Minimum<1>;
  /** Lookups of tokens a gateway has not cached, per second (a flood of random tokens waits: 503). */
  unknownTokenLookupsPerSecond: number & tags.Minimum<1>;
  /** Open connections one gateway accepts; more are closed at once. */
  httpMaxConnections: number & tags.Type<"uint32"> & tags.Minimum<1>;
  /** A client must send a request's headers within this long, and the whole request within the next. */
  httpHeadersTimeoutMs: number & tags.Type<"uint32"> & tags.Minimum<100>;
  httpRequestTimeoutMs: number & tags.Type<"uint32"> & tags.Minimum<100>;
  /**
   * A connection serving a request on which no byte moves for this long is closed: a client that
   * stopped reading its answer holds the gateway's memory and sockets no longer than this.
   */
  httpStallTimeoutMs: number & tags.Type<"uint32"> & tags.Minimum<100>;
  /** The dashboard may retry, clean, pause and promote jobs; read-only otherwise. */
  adminQueuesWritable: boolean;
  /** How the gateway writes accepted profile operations to their queue (one batch at a time). */
  profileOperationsBatch: MicroBatchSettings;
  /** How the gateway writes accepted tracked events to theirs. */
  eventsBatch: MicroBatchSettings;
  /** Settings given under a name this release still reads but replaced: the gateway names them at start. */
  deprecatedSettings: string[];
  /** Bytes of identify bodies one gateway reads and holds at once; past it a request gets 503. */
  bodyBytesInFlight: number & tags.Type<"uint32"> & tags.Minimum<262144>;
  /**
   * Bytes a second of users-API bodies one gateway reads before their credential can be checked
   * (it is in the body): reading and parsing them is CPU spent for anyone, so it is bounded.
   */
  unverifiedBodyBytesPerSecond: number & tags.Type<"uint32"> & tags.Minimum<262144>;
  /** Batch Idempotency-Keys one project keeps in Redis; past it, its oldest are forgotten. */
  batchIdempotencyKeysPerProject: number & tags.Type<"uint32"> & tags.Minimum<1>;
  /** A users-API body still arriving after this long is cut off (408, connection closed). */
  bodyReadTimeoutMs: number & tags.Type<"uint32"> & tags.Minimum<100>;
  /**
   * After SIGTERM the gateway answers /readyz with 503 but keeps serving this long, so a load
   * balancer stops sending traffic before the listener closes.
   */
  shutdownDelayMs: number & tags.Type<"uint32"> & tags.Maximum<60000>;
  /** Where a worker answers /healthz, /readyz and /metrics (0 picks a free port). */
  metricsPort: number & tags.Type<"uint32"> & tags.Maximum<65535>;
  /** How often the retention job runs (one worker takes each run). */
  maintenanceEveryMs: number & tags.Type<"uint32"> & tags.Minimum<1000>;
  /**
   * Failed jobs and dead letters are kept until an operator replays or discards them (ctl);
   * the retention job warns of those older than this.
   */
  failedJobWarnDays: number & tags.Minimum<0>;
  deadLetterWarnDays: number & tags.Minimum<0>;
  /** Settings given that this release no longer reads, each with what took its place: a worker names them at start. */
  retiredSettings: string[];
  /** A row that never became a profile (only update_only updates) is removed this long after its last update. */
  hiddenProfileRetentionDays: number & tags.Minimum<0>;
  /** Two events of a user with the same name and data (or check_id) received this close are one (0: off). */
  eventDedupWindowS: number & tags.Type<"uint32"> & tags.Maximum<86400>;
  /**
   * Change feed changes are kept this many days after they were applied (docs/changes.md,
   * "Retention"); a reader's cursor from before what was removed is refused (410).
   */
  changeRetentionDays: number & tags.Type<"uint32"> & tags.Minimum<1> & tags.Maximum<3650>;
  /** Events are kept this many days after they happened; then their day's partition is dropped. */
  eventRetentionDays: number & tags.Type<"uint32"> & tags.Minimum<1> & tags.Maximum<3650>;
  /** Jobs of each batch queue (profile operations, events) one worker process applies at once. */
  workerConcurrency: number & tags.Type<"uint32"> & tags.Minimum<1> & tags.Maximum<64>;
  /** How long a worker holds a job before another may take it over (after a crash). */
  workerLockMs: number & tags.Type<"uint32"> & tags.Minimum<1000>;
  /**
   * A job that fails for a reason other than its input is tried again after this, doubled at
   * each try up to jobRetryMaxDelayMs, for as long as it takes (docs/reliability.md).
   */
  jobRetryBaseDelayMs: number & tags.Type<"uint32"> & tags.Minimum<1>;
  jobRetryMaxDelayMs: number & tags.Type<"uint32"> & tags.Minimum<1>;
  /** How the worker delivers changes to webhook endpoints (docs/webhooks.md). */
  webhooks: WebhookSettings;
  /** What the intake log keeps of each project's requests (docs/intake-log.md). */
  intakeLog: IntakeLogSettings;
}

export interface RedisNodeAddress {
  host: string & tags.MinLength<1>;
  port: number & tags.Type<"uint32"> & tags.Minimum<1> & tags.Maximum<65535>;
}

/** The Sentinels that watch the Redis primary and promote a replica when it fails (docs/operations-redis.md). */
export interface RedisSentinelSettings {
  sentinels: RedisNodeAddress[] & tags.MinItems<1>;
  /** The primary's name among them (their `sentinel monitor` name). */
  name: string & tags.MinLength<1>;
  /** Where the Sentinels ask for one (`requirepass` in sentinel.conf); unset, they are asked without. */
  password?: string & tags.MinLength<1>;
}

/** The nodes of a Redis Cluster the processes ask for the others and the slots each serves (docs/operations-redis.md). */
export interface RedisClusterSettings {
  nodes: RedisNodeAddress[] & tags.MinItems<1>;
}

/**
 * A job write is answered only once this many replicas hold it (Redis WAIT, within `timeoutMs`),
 * so that a failover that promotes one of them cannot lose it; 0 answers on the primary's word.
 */
export interface ReplicasAckSettings {
  replicas: number & tags.Type<"uint32"> & tags.Maximum<16>;
  timeoutMs: number & tags.Type<"uint32"> & tags.Minimum<1> & tags.Maximum<10000>;
}

/** How webhooks are signed, sent, retried and parked. */
export interface WebhookSettings {
  /**
   * The key (32 bytes, in base64) that endpoints' signing secrets are sealed under in Postgres;
   * unset, no endpoint can be created and none is delivered to.
   */
  secretKey?: string & tags.Pattern<"^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$">;
  /** Whether an endpoint may reach loopback, private-use, shared and unique-local addresses and the host's own (tests, a private network). */
  allowPrivateNetworks: boolean;
  /** Changes one POST carries at most. */
  batchSize: number & tags.Type<"uint32"> & tags.Minimum<1> & tags.Maximum<1000>;
  /** Endpoints one worker delivers to at once (each endpoint one batch at a time, in order). */
  concurrency: number & tags.Type<"uint32"> & tags.Minimum<1> & tags.Maximum<256>;
  /** A connection not made within this long, or an exchange not over within the second, is a failed try. */
  connectTimeoutMs: number & tags.Type<"uint32"> & tags.Minimum<100>;
  timeoutMs: number & tags.Type<"uint32"> & tags.Minimum<100>;
  /** A failed batch is tried again after this, doubled at each try up to the maximum. */
  retryBaseDelayMs: number & tags.Type<"uint32"> & tags.Minimum<1>;
  retryMaxDelayMs: number & tags.Type<"uint32"> & tags.Minimum<1>;
  /** An endpoint that has failed one batch for this long is parked: left alone until ctl webhook replay. */
  parkAfterS: number & tags.Type<"uint32">;
  /** How often a worker looks for endpoints with changes to deliver. */
  pollMs: number & tags.Type<"uint32"> & tags.Minimum<10>;
}

/** The intake log's bounds (docs/intake-log.md): each project's recent requests, in Redis. */
export interface IntakeLogSettings {
  /** Entries a project keeps, about (Redis trims whole nodes of its stream); 0 keeps none: the log is off. */
  maxEntries: number & tags.Type<"uint32"> & tags.Maximum<1000000>;
  /** An entry is kept this long at most. */
  maxAgeS: number & tags.Type<"uint32"> & tags.Minimum<1> & tags.Maximum<604800>;
  /** An entry keeps this many bytes of its body at most. */
  bodyBytes: number & tags.Type<"uint32"> & tags.Minimum<256> & tags.Maximum<65536>;
}

/** A gateway micro-batch is written when it holds `size` items, or `maxBytes` of request bodies, or `waitMs` after its first. */
export interface MicroBatchSettings {
  size: number & tags.Type<"uint32"> & tags.Minimum<1> & tags.Maximum<5000>;
  maxBytes: number & tags.Type<"uint32"> & tags.Minimum<1024>;
  waitMs: number & tags.Type<"uint32"> & tags.Maximum<1000>;
  /** A try of a micro-batch's queue write that takes longer fails its requests (503). */
  writeTimeoutMs: number & tags.Type<"uint32"> & tags.Minimum<100> & tags.Maximum<60000>;
}

export class ConfigError extends Error {}

const validateConfig = typia.createValidate<Config>();

/** A number from the environment, or the default when the variable is not set (typia checks the rest). */
const numberOr = (text: string | undefined, fallback: number) => (text === undefined ? fallback : Number(text));

/** Settings this service no longer reads, and what took their place. */
const RETIRED_SETTINGS: Record<string, string> = {
  FAILED_JOB_RETENTION_DAYS:
    "failed jobs are no longer removed by age: they wait for ctl replay or ctl discard, and FAILED_JOB_WARN_DAYS says when to warn",
  DEAD_LETTER_RETENTION_DAYS:
    "dead letters are no longer removed by age: they wait for ctl replay or ctl discard, and DEAD_LETTER_WARN_DAYS says when to warn",
};

/**
 * Settings renamed, each with the names that replace it: the old name is still read, for each of
 * its new names not given, and named at start. IDENTIFY_BATCH_* and IDENTIFY_WRITE_TIMEOUT_MS
 * drove both micro-batchers.
 */
const DEPRECATED_SETTINGS: Record<string, string[]> = Object.fromEntries(
  ["BATCH_SIZE", "BATCH_MAX_BYTES", "BATCH_WAIT_MS", "WRITE_TIMEOUT_MS"].map((setting) => [
    `IDENTIFY_${setting}`,
    [`PROFILE_OPERATIONS_${setting}`, `EVENTS_${setting}`],
  ]),
);

/** The environment with each deprecated setting given copied to its new names not given. */
function withDeprecatedSettingsRead(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const read = { ...env };
  for (const [old, replacements] of Object.entries(DEPRECATED_SETTINGS)) {
    for (const name of replacements) read[name] ??= env[old];
  }
  return read;
}

function microBatchSettings(env: NodeJS.ProcessEnv, prefix: string) {
  return {
    size: numberOr(env[`${prefix}_BATCH_SIZE`], 500),
    maxBytes: numberOr(env[`${prefix}_BATCH_MAX_BYTES`], 1024 * 1024),
    waitMs: numberOr(env[`${prefix}_BATCH_WAIT_MS`], 2),
    writeTimeoutMs: numberOr(env[`${prefix}_WRITE_TIMEOUT_MS`], 2_000),
  };
}

/** `host:port` pairs separated by commas (an IPv6 host in brackets), the setting `name` holds. */
function nodeAddresses(name: string, text: string) {
  return text.split(",").map((entry) => {
    const address = /^\s*\[?([^\]]*?)\]?:(\d+)\s*$/.exec(entry);
    if (address === null) throw new ConfigError(`${name}: "${entry.trim()}" is not host:port`);
    return { host: address[1], port: Number(address[2]) };
  });
}

/** REDIS_SENTINELS, or unset. */
function redisSentinel(env: NodeJS.ProcessEnv) {
  if (!env.REDIS_SENTINELS) return undefined;
  return {
    sentinels: nodeAddresses("REDIS_SENTINELS", env.REDIS_SENTINELS),
    name: env.REDIS_SENTINEL_NAME ?? "mymaster",
    ...(env.REDIS_SENTINEL_PASSWORD ? { password: env.REDIS_SENTINEL_PASSWORD } : {}),
  };
}

/**
 * REDIS_CLUSTER_NODES, or unset. A cluster promotes its own replicas: no Sentinel watches it, and
 * it has one database only.
 */
function redisCluster(env: NodeJS.ProcessEnv) {
  if (!env.REDIS_CLUSTER_NODES) return undefined;
  if (env.REDIS_SENTINELS) throw new ConfigError("REDIS_CLUSTER_NODES and REDIS_SENTINELS: set one or the other");
  const database = /^rediss?:\/\/[^/]*\/(\d+)/.exec(env.REDIS_URL ?? "")?.[1];
  if (database !== undefined && database !== "0") {
    throw new ConfigError(`REDIS_URL names database ${database}: a Redis Cluster has database 0 only`);
  }
  return { nodes: nodeAddresses("REDIS_CLUSTER_NODES", env.REDIS_CLUSTER_NODES) };
}

/**
 * A writer waits for the replicas at most twice their timeout (the acknowledgement in flight when
 * its write lands, then its own): within its batch's write timeout, a missing replica is a 503.
 */
function checkReplicasAckFitsWrites(config: Config): void {
  if (config.redisReplicasAck.replicas === 0) return;
  for (const [name, batch] of [
    ["PROFILE_OPERATIONS_WRITE_TIMEOUT_MS", config.profileOperationsBatch],
    ["EVENTS_WRITE_TIMEOUT_MS", config.eventsBatch],
  ] as const) {
    if (2 * config.redisReplicasAck.timeoutMs >= batch.writeTimeoutMs) {
      throw new ConfigError(
        `invalid configuration: REDIS_REPLICAS_ACK_TIMEOUT_MS (${config.redisReplicasAck.timeoutMs}) must be under half of ${name} (${batch.writeTimeoutMs})`,
      );
    }
  }
}

/** WEBHOOK_SECRET_KEY, or the content of the file WEBHOOK_SECRET_KEY_FILE names (a mounted secret). */
function webhookSecretKey(env: NodeJS.ProcessEnv): string | undefined {
  if (env.WEBHOOK_SECRET_KEY) return env.WEBHOOK_SECRET_KEY;
  const file = env.WEBHOOK_SECRET_KEY_FILE;
  if (!file) return undefined;
  try {
    return readFileSync(file, "utf8").trim();
  } catch (error) {
    throw new ConfigError(`WEBHOOK_SECRET_KEY_FILE cannot be read: ${(error as NodeJS.ErrnoException).code ?? error}`);
  }
}

export function loadConfig(given: NodeJS.ProcessEnv = process.env): Config {
  const env = withDeprecatedSettingsRead(given);
  const candidate = {
    databaseUrl: env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
    redisUrl: env.REDIS_URL ?? "redis://127.0.0.1:6379",
    redisSentinel: redisSentinel(env),
    redisCluster: redisCluster(env),
    redisReplicasAck: {
      replicas: numberOr(env.REDIS_REPLICAS_ACK, 0),
      timeoutMs: numberOr(env.REDIS_REPLICAS_ACK_TIMEOUT_MS, 500),
    },
    redisFailoverHoldMs: numberOr(env.REDIS_FAILOVER_HOLD_MS, 8_000),
    port: numberOr(env.PORT, 3000),
    logLevel: env.LOG_LEVEL ?? "info",
    redisDurability: env.REDIS_DURABILITY ?? "require",
    queuePrefix: env.QUEUE_PREFIX ?? "cm",
    intakeQueueShards: numberOr(env.INTAKE_QUEUE_SHARDS, 1),
    adminToken: env.ADMIN_TOKEN || undefined,
    adminQueuesWritable: env.ADMIN_QUEUES_WRITABLE === "true",
    rateLimitPerSecond: numberOr(env.RATE_LIMIT_PER_SECOND, 50_000),
    rateLimitBurst: numberOr(env.RATE_LIMIT_BURST, 100_000),
    unknownTokenLookupsPerSecond: numberOr(env.UNKNOWN_TOKEN_LOOKUPS_PER_SECOND, 500),
    httpMaxConnections: numberOr(env.HTTP_MAX_CONNECTIONS, 10_000),
    httpHeadersTimeoutMs: numberOr(env.HTTP_HEADERS_TIMEOUT_MS, 10_000),
    httpRequestTimeoutMs: numberOr(env.HTTP_REQUEST_TIMEOUT_MS, 30_000),
    httpStallTimeoutMs: numberOr(env.HTTP_STALL_TIMEOUT_MS, 30_000),
    profileOperationsBatch: microBatchSettings(env, "PROFILE_OPERATIONS"),
    eventsBatch: microBatchSettings(env, "EVENTS"),
    deprecatedSettings: Object.entries(DEPRECATED_SETTINGS)
      .filter(([name]) => given[name] !== undefined)
      .map(([name, replacements]) => `${name} is deprecated: set ${replacements.join(" and ")} instead`),
    bodyBytesInFlight: numberOr(env.BODY_BYTES_IN_FLIGHT, 32 * 1024 * 1024),
    bodyReadTimeoutMs: numberOr(env.BODY_READ_TIMEOUT_MS, 10_000),
    batchIdempotencyKeysPerProject: numberOr(env.BATCH_IDEMPOTENCY_KEYS_PER_PROJECT, 100_000),
    unverifiedBodyBytesPerSecond: numberOr(env.UNVERIFIED_BODY_BYTES_PER_SECOND, 8 * 1024 * 1024),
    shutdownDelayMs: numberOr(env.SHUTDOWN_DELAY_MS, 0),
    metricsPort: numberOr(env.METRICS_PORT, 9464),
    maintenanceEveryMs: numberOr(env.MAINTENANCE_EVERY_MS, 3_600_000),
    failedJobWarnDays: numberOr(env.FAILED_JOB_WARN_DAYS, 14),
    deadLetterWarnDays: numberOr(env.DEAD_LETTER_WARN_DAYS, 30),
    retiredSettings: Object.entries(RETIRED_SETTINGS)
      .filter(([name]) => env[name] !== undefined)
      .map(([name, instead]) => `${name} is no longer read: ${instead}`),
    hiddenProfileRetentionDays: numberOr(env.HIDDEN_PROFILE_RETENTION_DAYS, 30),
    eventDedupWindowS: numberOr(env.EVENT_DEDUP_WINDOW_S, 300),
    eventRetentionDays: numberOr(env.EVENT_RETENTION_DAYS, 90),
    changeRetentionDays: numberOr(env.CHANGE_RETENTION_DAYS, 7),
    workerConcurrency: numberOr(env.WORKER_CONCURRENCY, 4),
    workerLockMs: numberOr(env.WORKER_LOCK_MS, 30_000),
    jobRetryBaseDelayMs: numberOr(env.JOB_RETRY_BASE_DELAY_MS, 500),
    jobRetryMaxDelayMs: numberOr(env.JOB_RETRY_MAX_DELAY_MS, 60_000),
    intakeLog: {
      // Off unless asked for (npm start asks): it costs the identify intake more than it should yet (docs/intake-log.md).
      maxEntries: numberOr(env.INTAKE_LOG_MAX_ENTRIES, 0),
      maxAgeS: numberOr(env.INTAKE_LOG_MAX_AGE_S, 86_400),
      bodyBytes: numberOr(env.INTAKE_LOG_BODY_BYTES, 2048),
    },
    webhooks: {
      secretKey: webhookSecretKey(env),
      allowPrivateNetworks: env.WEBHOOK_ALLOW_PRIVATE_NETWORKS === "true",
      batchSize: numberOr(env.WEBHOOK_BATCH_SIZE, 100),
      concurrency: numberOr(env.WEBHOOK_CONCURRENCY, 8),
      connectTimeoutMs: numberOr(env.WEBHOOK_CONNECT_TIMEOUT_MS, 5_000),
      timeoutMs: numberOr(env.WEBHOOK_TIMEOUT_MS, 15_000),
      retryBaseDelayMs: numberOr(env.WEBHOOK_RETRY_BASE_DELAY_MS, 10_000),
      retryMaxDelayMs: numberOr(env.WEBHOOK_RETRY_MAX_DELAY_MS, 3_600_000),
      parkAfterS: numberOr(env.WEBHOOK_PARK_AFTER_S, 3 * 86_400),
      pollMs: numberOr(env.WEBHOOK_POLL_MS, 1_000),
    },
  };
  const result = validateConfig(candidate);
  if (!result.success) {
    const problems = result.errors.map((e) => `${e.path.replace("$input.", "")}: expected ${e.expected}`);
    throw new ConfigError(`invalid configuration: ${problems.join("; ")}`);
  }
  checkReplicasAckFitsWrites(result.data);
  return result.data;
}
