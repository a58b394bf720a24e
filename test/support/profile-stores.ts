import type { Sql } from "@cm/db";
import { everyIntakeQueue, intakeQueues } from "@cm/queue";
import { cachedProfileKeys, type ProfileStores } from "@cm/app";
import { TEST_SHARDS } from "./env";
import { testRedis } from "./redis";

/** What applyProfileOperations applies to: a test file's database, and its batch queues. */
export function testProfileStores(sql: Sql, queuePrefix: string): ProfileStores & { close(): Promise<void> } {
  const connection = testRedis({ maxRetriesPerRequest: null });
  const queues = intakeQueues(connection, queuePrefix, TEST_SHARDS);
  return {
    sql,
    ...queues,
    profileKeys: cachedProfileKeys(sql),
    intakeLog: { redis: connection, prefix: queuePrefix },
    async close() {
      await Promise.all(everyIntakeQueue(queues).map((queue) => queue.close()));
      connection.disconnect();
    },
  };
}
