import type { Sql } from "@cm/db";
import { eventsQueue, profileOperationsQueue } from "@cm/queue";
import { cachedProfileKeys, type ProfileStores } from "@cm/app";
import { Redis } from "ioredis";
import { REDIS_URL } from "./env";

/** What applyProfileOperations applies to: a test file's database, and its batch queues. */
export function testProfileStores(sql: Sql, queuePrefix: string): ProfileStores & { close(): Promise<void> } {
  const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const queues = {
    profileOperationsQueue: profileOperationsQueue(connection, queuePrefix),
    eventsQueue: eventsQueue(connection, queuePrefix),
  };
  return {
    sql,
    ...queues,
    profileKeys: cachedProfileKeys(sql),
    async close() {
      await Promise.all([queues.profileOperationsQueue.close(), queues.eventsQueue.close()]);
      connection.disconnect();
    },
  };
}
