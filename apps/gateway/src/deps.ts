import type { Sql } from "@cm/db";
import type { ProfileOperation, TokenBucket, TrackedEvent } from "@cm/domain";
import {
  everyIntakeQueue,
  type IntakeLogAt,
  type IntakeQueues,
  type RedisConnection,
  type RedisDurabilityMode,
  type TopicFanoutJobData,
  type WebhookDeliveryJobData,
  type WebhookPollJobData,
} from "@cm/queue";
import type { Queue } from "bullmq";
import type { Logger } from "pino";
import type { CredentialCache } from "./auth/credential-cache";
import type { ChangeWaits } from "./change-waits";
import type { BodyBudget } from "./body/body-budget";
import type { IdempotentReplies } from "./idempotent-replies";
import type { IntakeLogWriter } from "./intake-log/writer";
import type { RateLimiter } from "./rate-limit/rate-limiter";
import type { Batcher } from "./micro-batcher";
import type { PoolShares } from "./pool-shares";
import type { GatewayMetrics } from "./metrics";

// What the routes need, in parts: each router takes only the parts its routes use, so that its
// signature says what it depends on. The use cases of libs/app take smaller parts still (its deps.ts).

/** Postgres: the pool the operations read and write on. */
export interface Postgres {
  sql: Sql;
  /** Each project's share of `sql`'s connections, held while a key-authenticated operation runs. */
  poolShares: PoolShares;
}

/** Who may call, and how often: every authenticated route checks its credential and rate limit with these. */
export interface Access {
  credentials: CredentialCache;
  rateLimiter: RateLimiter;
}

/** What the users API reads its bodies within (routes/users-api.ts). */
export interface BodyLimits {
  bodyBudget: BodyBudget;
  /** Bytes of bodies read before their credential can be checked, per second (UNVERIFIED_BODY_BYTES_PER_SECOND). */
  unverifiedBodyBytes: TokenBucket;
  /** A body still arriving after this long is cut off (408). */
  bodyReadTimeoutMs: number;
}

/** Where the users API queues what it accepts (use-cases/). */
export interface Intake {
  /** Identifies and the other users-API operations, one identify job per micro-batch (of a shard). */
  profileOperationBatcher: Batcher<ProfileOperation>;
  /** Tracked events, one events job per micro-batch (of a shard). */
  eventBatcher: Batcher<TrackedEvent>;
  /** EVENT_DEDUP_WINDOW_S, in ms. */
  eventDedupWindowMs: number;
  /** Batch answers by Idempotency-Key, for retries. */
  idempotentReplies: IdempotentReplies;
}

/** The job queues: the dashboard shows them, a topic update adds its fan-out, shutdown closes them. */
export interface Queues extends IntakeQueues {
  topicFanoutQueue: Queue<TopicFanoutJobData>;
  /** Shown in the queue dashboard only: the workers queue webhook deliveries. */
  webhooksQueue: Queue<WebhookDeliveryJobData | WebhookPollJobData>;
}

/** Each queue of `queues`, every shard apart: what the metrics and the dashboard show and shutdown closes. */
export const everyQueue = (queues: Queues): Queue[] => [
  ...everyIntakeQueue(queues),
  queues.topicFanoutQueue,
  queues.webhooksQueue,
];

export interface Observability {
  logger: Logger;
  metrics: GatewayMetrics;
}

/** What /readyz checks besides Postgres. */
export interface Health {
  redis: RedisConnection;
  /** Whether readiness also requires a Redis that cannot lose accepted identifies. */
  redisDurability: RedisDurabilityMode;
  /** Replicas each job write waits for (REDIS_REPLICAS_ACK): readiness requires the primary to have as many in sync. */
  redisReplicasAck: number;
  /** Turns false when shutdown begins, so /readyz sends traffic elsewhere. */
  readiness: { accepting: boolean };
}

/** The change feed's long-polling readers, woken by the gateway's LISTEN connection. */
export interface ChangeFeed {
  changeWaits: ChangeWaits;
}

/** The intake log's writes (docs/intake-log.md): what the users API, the batch and /v1 leave of each request. */
export interface IntakeLogging {
  intakeLogWriter: IntakeLogWriter;
  /** INTAKE_LOG_BODY_BYTES: what an entry keeps of its body. */
  intakeLogBodyBytes: number;
}

/** The intake log's reads (GET /api/v2/intake-log): where it is, and its long-polling readers, woken by its writes. */
export interface IntakeLogReads {
  intakeLog: IntakeLogAt;
  intakeWaits: ChangeWaits;
}

/** The queue dashboard's settings. */
export interface Dashboard {
  /** Guards the queue dashboard; undefined refuses everyone. */
  adminToken: string | undefined;
  /** Whether the dashboard may change jobs (retry, clean, pause); read-only by default. */
  adminQueuesWritable: boolean;
}

/** Every part, built once at start-up (gateway.ts) or by a test; app.ts hands each router its parts. */
export type GatewayDeps = Postgres &
  Access &
  BodyLimits &
  Intake &
  Queues &
  Observability &
  Health &
  ChangeFeed &
  IntakeLogging &
  IntakeLogReads &
  Dashboard;
