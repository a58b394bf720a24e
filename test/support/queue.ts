import type { Queue } from "bullmq";
import { uniqueName } from "./env";
import { keysMatching, testRedis } from "./redis";
import { waitFor } from "./wait";

/** A queue prefix of its own for one test file, and a way to remove its keys afterwards. */
export function createTestQueuePrefix(label: string): { prefix: string; cleanup(): Promise<void> } {
  const prefix = uniqueName(`cmtest_${label}`);
  return {
    prefix,
    async cleanup() {
      const redis = testRedis();
      // One key a command (sent together): on a cluster the keys are in many slots.
      await Promise.all((await keysMatching(redis, `*${prefix}:*`)).map((key) => redis.del(key)));
      redis.disconnect();
    },
  };
}

/**
 * Waits until no job of these queues waits, runs or is delayed: every operation acknowledged
 * before the call is applied. An operation's job and a tracked event's are applied in either
 * order, so the state a test reads is final only once both queues are drained.
 */
export async function drained(queues: Queue[], timeoutMs = 30_000): Promise<void> {
  const counts = () =>
    Promise.all(
      queues.map(async (queue) => {
        const byState = await queue.getJobCounts("waiting", "active", "delayed", "prioritized", "waiting-children");
        return [queue.name, byState] as const;
      }),
    );
  await waitFor(
    `${queues.map((queue) => queue.name).join(", ")} drained`,
    async () =>
      (await counts()).every(([, byState]) => Object.values(byState).every((n) => n === 0)) ? true : undefined,
    timeoutMs,
  ).catch(async (error: unknown) => {
    throw new Error(`${(error as Error).message}: ${JSON.stringify(await counts())}`);
  });
}
