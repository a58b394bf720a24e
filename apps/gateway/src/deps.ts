import type { Sql } from "@cm/db";
import type { ProfileOperation, TokenBucket, TrackedEvent } from "@cm/domain";
import type {
  EventsJobData,
  ProfileOperationsJobData,
  RedisDurabilityMode,
  TopicFanoutJobData,
  WebhookDeliveryJobData,
  WebhookPollJobData,
} from "@cm/queue";
import type { Queue } from "bullmq";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import type { CredentialCache } from "./auth/credential-cache";
import type { ChangeWaits } from "./change-waits";
import type { BodyBudget } from "./body/body-budget";
import type { IdempotentReplies } from "./idempotent-replies";
import type { RateLimiter } from "./rate-limit/rate-limiter";
import type { MicroBatcher } from "./micro-batcher";
import type { PoolShares } from "./pool-shares";
import type { GatewayMetrics } from "./metrics";

/** What the routes need, built once at start-up (main.ts) or by a test. */
export interface GatewayDeps {
  sql: Sql;
  /** Each project's share of `sql`'s connections, held while a key-authenticated operation runs. */
  poolShares: PoolShares;
  redis: Redis;
  profileOperationsQueue: Queue<ProfileOperationsJobData>;
  eventsQueue: Queue<EventsJobData>;
  topicFanoutQueue: Queue<TopicFanoutJobData>;
  /** Shown in the queue dashboard only: the workers queue webhook deliveries. */
  webhooksQueue: Queue<WebhookDeliveryJobData | WebhookPollJobData>;
  credentials: CredentialCache;
  /** Identifies and the other users-API operations, one identify job per micro-batch. */
  profileOperationBatcher: MicroBatcher<ProfileOperation>;
  /** Tracked events, one events job per micro-batch. */
  eventBatcher: MicroBatcher<TrackedEvent>;
  /** EVENT_DEDUP_WINDOW_S, in ms. */
  eventDedupWindowMs: number;
  /** Batch answers by Idempotency-Key, for retries. */
  idempotentReplies: IdempotentReplies;
  bodyBudget: BodyBudget;
  /** Bytes of bodies read before their credential can be checked, per second (UNVERIFIED_BODY_BYTES_PER_SECOND). */
  unverifiedBodyBytes: TokenBucket;
  /** A body still arriving after this long is cut off (408). */
  bodyReadTimeoutMs: number;
  rateLimiter: RateLimiter;
  logger: Logger;
  metrics: GatewayMetrics;
  /** Guards the queue dashboard; undefined refuses everyone. */
  adminToken: string | undefined;
  /** Whether the dashboard may change jobs (retry, clean, pause); read-only by default. */
  adminQueuesWritable: boolean;
  /** Whether readiness also requires a Redis that cannot lose accepted identifies. */
  redisDurability: RedisDurabilityMode;
  /** The change feed's long-polling readers, woken by the gateway's LISTEN connection. */
  changeWaits: ChangeWaits;
  /** Turns false when shutdown begins, so /readyz sends traffic elsewhere. */
  readiness: { accepting: boolean };
}
