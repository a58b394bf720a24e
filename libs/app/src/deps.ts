import type { Sql } from "@cm/db";
import type { addTopicFanout } from "@cm/queue";

// What the use cases are given, each only the parts it uses: the gateway passes its GatewayDeps,
// the ctl and the worker what they opened themselves.

/** The Postgres pool every use case reads and writes through. */
export interface Store {
  sql: Sql;
}

/** Where a use case notes a failure it answers for (pino's Logger is one); never personal data. */
export interface WarningLog {
  warn(details: object, message: string): void;
}

/** Runs a query within the project's share of the pool (the gateway's PoolShares). */
export interface ProjectShares {
  run<T>(projectId: number, work: () => Promise<T>): Promise<T>;
}

/** The queue of topic fan-outs (libs/queue topic-fanout-queue.ts). */
export type TopicFanoutQueue = Parameters<typeof addTopicFanout>[0];
