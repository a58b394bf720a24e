import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { logThrottle, type Config, type MicroBatchSettings } from "@cm/config";
import { connect, findCredential, listenForChanges, type Sql } from "@cm/db";
import { CHANGE_WAIT_MAX_S, INTAKE_WAIT_MAX_S, TokenBucket } from "@cm/domain";
import {
  addEventBatch,
  addProfileOperationsBatch,
  checkRedisDurability,
  eventShard,
  operationShard,
  intakeQueues,
  isRedisFailover,
  producerConnection,
  topicFanoutQueue,
  webhooksQueue,
  type BatchJobOptions,
  type RedisConnection,
} from "@cm/queue";
import type { Queue } from "bullmq";
import type { Logger } from "pino";
import { createApp } from "./app";
import { CredentialCache } from "./auth/credential-cache";
import { BodyBudget } from "./body/body-budget";
import { ChangeWaits } from "./change-waits";
import { answerClientError } from "./client-error";
import { IdempotentReplies } from "./idempotent-replies";
import { IntakeLogWriter } from "./intake-log/writer";
import { RateLimiter } from "./rate-limit/rate-limiter";
import { everyQueue, type GatewayDeps, type Queues } from "./deps";
import { MicroBatcher, ShardedBatcher } from "./micro-batcher";
import { PoolShares } from "./pool-shares";
import { createGatewayMetrics } from "./metrics";

export interface RunningGateway {
  server: Server;
  url: string;
  deps: GatewayDeps;
  /** Graceful stop: not ready, no new connections, pending batch written, answers sent, then disconnect. */
  stop(): Promise<void>;
}

const REDIS_START_WAIT_MS = 5_000;

/** Connections of the pool the operations read and write on (credentials have a pool apart)... */
const POOL_SIZE = 10;
/** ...and how many of them one project's operations may hold at once. */
export const PROJECT_POOL_SHARE = POOL_SIZE / 2;

/**
 * Change feed readers one gateway holds waiting at once (docs/changes.md, "Long-poll"); past it a
 * reader is answered at once with what there is.
 */
export const MAX_WAITING_READERS = 1_000;

/** Producers queue no command while disconnected, so the start-up check (and the first writes) wait for the connection. */
async function connectedWithin(redis: RedisConnection, ms: number): Promise<boolean> {
  if (redis.status === "ready") return true;
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    redis.once("ready", () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/**
 * The gateway's connections to Redis. Jobs are written on one of their own: where they wait for
 * replicas (REDIS_REPLICAS_ACK), the WAIT that follows a write blocks its connection until the
 * replicas answer, and the rate limits and batch answers of other requests do not queue behind it.
 */
export interface GatewayRedis {
  jobs: RedisConnection;
  /** Rate limits, batch answers by Idempotency-Key, the dashboard's webhooks queue, readiness. */
  shared: RedisConnection;
  /**
   * The intake log's writes and reads: its writes, hundreds of entries at once, never hold up a
   * rate limit's lease behind them (with them on the shared connection the identify intake fell
   * to 55%, bench/intake-log.mjs).
   */
  intakeLog: RedisConnection;
}

/** Both, made from the config: gateways, and benchmarks that serve the gateway's app. */
export function gatewayRedis(config: Config): GatewayRedis {
  return {
    jobs: producerConnection(config),
    shared: producerConnection(config),
    intakeLog: producerConnection(config),
  };
}

/**
 * What the routes use, made from the config around the given Redis and Postgres clients: the
 * queues, batchers, caches and limits. startGateway serves it; bench/journeys.mjs's baseline
 * serves it with a Postgres client that answers at once, so that both run the same app.
 * Credentials are looked up on `credentialSql`, a pool apart, so that no read can keep a request
 * waiting for its credential.
 */
export function gatewayDeps(
  config: Config,
  logger: Logger,
  { jobs, shared: redis, intakeLog: intakeLogRedis }: GatewayRedis,
  sql: Sql,
  credentialSql: Sql = sql,
): GatewayDeps {
  const queues: Queues = {
    ...intakeQueues(jobs, config.queuePrefix, config.intakeQueueShards),
    topicFanoutQueue: topicFanoutQueue(jobs, config.queuePrefix),
    webhooksQueue: webhooksQueue(redis, config.queuePrefix),
  };
  for (const queue of everyQueue(queues))
    queue.on("error", (error) => logger.warn({ err: error.message }, `${queue.name} queue error`));

  const bodyBudget = new BodyBudget(config.bodyBytesInFlight);
  const metrics = createGatewayMetrics(everyQueue(queues), () => bodyBudget.held);
  // The log's readers wait as the change feed's do; each wait ends before the stall timeout cuts its connection.
  const intakeWaits = new ChangeWaits(
    MAX_WAITING_READERS,
    Math.max(0, Math.min(INTAKE_WAIT_MAX_S * 1000, config.httpStallTimeoutMs - 1000)),
  );
  const intakeLog = {
    redis: intakeLogRedis,
    prefix: config.queuePrefix,
    maxEntries: config.intakeLog.maxEntries,
    maxAgeMs: config.intakeLog.maxAgeS * 1000,
  };
  const logIntakeFailure = logThrottle(1);
  /** A micro-batcher a shard of `shards`, each writing its batches there with `add`. */
  const shardedBatcher = <Item, Data>(
    shards: Queue<Data>[],
    add: (queue: Queue<Data>, items: Item[], options: BatchJobOptions) => Promise<unknown>,
    { size, maxBytes, waitMs, writeTimeoutMs }: MicroBatchSettings,
    onBatch: (size: number) => void,
    shardOf: (item: Item, shards: number) => number,
  ) =>
    new ShardedBatcher(
      shards.map(
        (queue) =>
          new MicroBatcher<Item>(
            async (items, batchId) => {
              await add(queue, items, { jobId: batchId });
            },
            {
              maxBatchSize: size,
              maxBatchBytes: maxBytes,
              maxWaitMs: waitMs,
              writeTimeoutMs,
              holdMs: config.redisFailoverHoldMs,
              retryable: isRedisFailover,
            },
            onBatch,
          ),
      ),
      shardOf,
    );

  return {
    sql,
    poolShares: new PoolShares(PROJECT_POOL_SHARE),
    redis,
    ...queues,
    credentials: new CredentialCache((token) => findCredential(credentialSql, token), {
      lookupsPerSecond: config.unknownTokenLookupsPerSecond,
    }),
    rateLimiter: new RateLimiter(
      redis,
      config.queuePrefix,
      { rate: config.rateLimitPerSecond, burst: config.rateLimitBurst },
      logger,
    ),
    profileOperationBatcher: shardedBatcher(
      queues.profileOperationsQueues,
      addProfileOperationsBatch,
      config.profileOperationsBatch,
      (size) => metrics.profileOperationsBatchSize.observe(size),
      operationShard,
    ),
    eventBatcher: shardedBatcher(
      queues.eventsQueues,
      addEventBatch,
      config.eventsBatch,
      (size) => metrics.eventBatchSize.observe(size),
      eventShard,
    ),
    eventDedupWindowMs: config.eventDedupWindowS * 1000,
    idempotentReplies: new IdempotentReplies(redis, config.queuePrefix, config.batchIdempotencyKeysPerProject),
    bodyBudget,
    bodyReadTimeoutMs: config.bodyReadTimeoutMs,
    unverifiedBodyBytes: new TokenBucket(config.unverifiedBodyBytesPerSecond, config.unverifiedBodyBytesPerSecond),
    logger,
    metrics,
    adminToken: config.adminToken,
    adminQueuesWritable: config.adminQueuesWritable,
    redisDurability: config.redisDurability,
    redisReplicasAck: config.redisReplicasAck.replicas,
    // A wait ends a second before the stall timeout would cut the silent connection.
    changeWaits: new ChangeWaits(
      MAX_WAITING_READERS,
      Math.max(0, Math.min(CHANGE_WAIT_MAX_S * 1000, config.httpStallTimeoutMs - 1000)),
    ),
    intakeLog,
    intakeWaits,
    intakeLogWriter: new IntakeLogWriter(intakeLog, (projectId) => intakeWaits.notify(projectId), {
      writeFailed: (error) =>
        logIntakeFailure((suppressed) =>
          logger.warn({ err: (error as Error).message, suppressed }, "intake log entries not written"),
        ),
      dropped: (count) =>
        logIntakeFailure((suppressed) =>
          logger.warn({ count, suppressed }, "intake log entries dropped: too many waiting to be written"),
        ),
    }),
    intakeLogBodyBytes: config.intakeLog.bodyBytes,
    readiness: { accepting: true },
  };
}

export async function startGateway(config: Config, logger: Logger): Promise<RunningGateway> {
  const connections = gatewayRedis(config);
  const { shared: redis } = connections;
  const all = [connections.jobs, redis, connections.intakeLog];
  const disconnect = () => all.forEach((connection) => connection.disconnect());
  for (const connection of all)
    connection.on("error", (error: Error) => logger.warn({ err: error.message }, "redis connection error"));
  const connected = await Promise.all(all.map((connection) => connectedWithin(connection, REDIS_START_WAIT_MS)));
  if (connected.every(Boolean)) {
    await checkRedisDurability(redis, config.redisDurability, (message) => logger.warn(message)).catch(
      (error: unknown) => {
        disconnect();
        throw error;
      },
    );
  } else {
    logger.warn("Redis unreachable at start: readiness stays red until it answers, and checks its settings then");
  }
  const sql = connect(config.databaseUrl, { max: POOL_SIZE, applicationName: "cm-gateway" });
  const credentialSql = connect(config.databaseUrl, { max: 2, applicationName: "cm-gateway-credentials" });
  const deps = gatewayDeps(config, logger, connections, sql, credentialSql);
  // Not waited for: the gateway starts without Postgres, and without the notices (Postgres away at
  // start) waiting readers still read again every 250 ms. sql.end closes its connection.
  listenForChanges(sql, (projectId) => deps.changeWaits.notify(projectId)).catch((error: unknown) => {
    logger.warn({ err: (error as Error).message }, "change feed notices unavailable: waiting readers poll");
  });

  const handle = createApp(deps).callback();
  // Slow or idle-mid-request clients are checked every second, not Node's default 30 s.
  const server = createServer(
    {
      headersTimeout: config.httpHeadersTimeoutMs,
      requestTimeout: config.httpRequestTimeoutMs,
      connectionsCheckingInterval: 1_000,
    },
    (request, response) => {
      // A client that stopped reading (an export it asked for, a page) is let go: what its answer
      // holds (the pages read ahead, the socket) is held no longer than this.
      response.setTimeout(config.httpStallTimeoutMs, () => response.destroy());
      return handle(request, response);
    },
  );
  server.maxConnections = config.httpMaxConnections;
  server.on("clientError", answerClientError);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(config.port, resolve));
  const { port } = server.address() as AddressInfo;

  let stopping: Promise<void> | null = null;
  const stop = () => {
    stopping ??= (async () => {
      deps.readiness.accepting = false;
      await new Promise((resolve) => setTimeout(resolve, config.shutdownDelayMs));
      // Waiting feed readers are answered now, not when their wait ends.
      deps.changeWaits.close();
      deps.intakeWaits.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const idleSweep = setInterval(() => server.closeIdleConnections(), 100);
      await closed;
      clearInterval(idleSweep);
      await Promise.all([
        deps.profileOperationBatcher.drain(),
        deps.eventBatcher.drain(),
        deps.intakeLogWriter.drain(),
      ]);
      await Promise.all(everyQueue(deps).map((queue) => queue.close()));
      disconnect();
      await Promise.all([sql.end({ timeout: 5 }), credentialSql.end({ timeout: 5 })]);
    })();
    return stopping;
  };

  return { server, url: `http://127.0.0.1:${port}`, deps, stop };
}
