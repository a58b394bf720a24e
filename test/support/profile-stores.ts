import type { Sql } from "@cm/db";
import { identifyQueue } from "@cm/queue";
import type { ProfileStores } from "@cm/worker";
import { Redis } from "ioredis";
import { REDIS_URL } from "./env";

/** What applyProfileOperations applies to: a test file's database, and its identify queue. */
export function testProfileStores(sql: Sql, queuePrefix: string): ProfileStores & { close(): Promise<void> } {
  const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const queue = identifyQueue(connection, queuePrefix);
  return {
    sql,
    identifyQueue: queue,
    async close() {
      await queue.close();
      connection.disconnect();
    },
  };
}
