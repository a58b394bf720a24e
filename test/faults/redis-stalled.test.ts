import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntilApplied } from "../support/applied";
import { identifyLoad } from "../support/identify-load";
import { DURABLE_REDIS, startPrivateRedis, type PrivateRedis } from "../support/private-redis";
import { createTestStack, type TestStack } from "../support/services";

// A stalled Redis (SIGSTOP: connections open, nothing answered) for eight seconds under load:
// no request waits for its answer much longer than the gateway's deadline for a queue write
// (PROFILE_OPERATIONS_WRITE_TIMEOUT_MS, 2 s); the writes in flight fail with 503 (they may still land),
// new ones are refused unsent with 503, none with 500; and every identify answered 200 is applied.

const WRITE_DEADLINE_MS = 2_000;
// Without the deadline a request would wait out the whole stall; the slack keeps a busy CI
// machine's scheduling delays from failing the test while staying far below the stall.
const STALL_MS = 8_000;
const SLACK_MS = 3_000;

let redis: PrivateRedis;
let stack: TestStack;
let base: string;

beforeAll(async () => {
  redis = await startPrivateRedis(DURABLE_REDIS);
  stack = await createTestStack("redis_stalled", { redisUrl: redis.url, redisDurability: "require" });
  base = (await stack.gateway()).url;
  await stack.worker();
});
afterAll(async () => {
  redis.resume();
  await stack.close();
  await redis.stop();
});

describe("Redis stalled under load", () => {
  it(
    "answers every request within the write deadline and loses no acknowledged identify",
    { timeout: 90_000 },
    async () => {
      const load = identifyLoad(base, stack.project.authToken, "stalled", 40, Date.now() + STALL_MS + 3_000);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      redis.pause();
      await new Promise((resolve) => setTimeout(resolve, STALL_MS));
      redis.resume();
      const { statuses, acknowledged, slowestMs } = await load;

      expect(statuses.has(200)).toBe(true);
      expect(statuses.has(503)).toBe(true);
      expect([...statuses].filter((status) => ![200, 503].includes(status))).toEqual([]);
      expect(slowestMs).toBeLessThan(WRITE_DEADLINE_MS + SLACK_MS);
      await waitUntilApplied(stack.db.sql, stack.project.id, acknowledged, 30_000);
    },
  );
});
