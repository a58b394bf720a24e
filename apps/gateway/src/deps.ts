import type { Sql } from "@cm/db";
import type { IdentifyJobData } from "@cm/queue";
import type { Queue } from "bullmq";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import type { CredentialCache } from "./auth/credential-cache";
import type { IdentifyBatcher } from "./identify-batcher";

/** What the routes need, built once at start-up (main.ts) or by a test. */
export interface GatewayDeps {
  sql: Sql;
  redis: Redis;
  identifyQueue: Queue<IdentifyJobData>;
  credentials: CredentialCache;
  identifyBatcher: IdentifyBatcher;
  logger: Logger;
  /** Turns false when shutdown begins, so /readyz sends traffic elsewhere. */
  readiness: { accepting: boolean };
}
