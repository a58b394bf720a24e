import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DURABLE_REDIS, startPrivateRedis, type PrivateRedis } from "../support/private-redis";
import { createTestStack, type TestStack } from "../support/services";
import { waitUntilApplied } from "../support/applied";

// Redis at maxmemory (noeviction, as it must run): the gateway answers 503 with Retry-After and
// logs no payload (the end-of-run log scan looks for the emails these identifies carry),
// readiness turns red, workers pause instead of spinning, and once Redis has room again
// everything recovers by itself and every acknowledged identify is applied.

let redis: PrivateRedis;
let stack: TestStack;
let base: string;

beforeAll(async () => {
  redis = await startPrivateRedis([...DURABLE_REDIS, "--maxmemory", "6mb"]);
  stack = await createTestStack("redis_full", { redisUrl: redis.url, redisDurability: "require" });
  base = (await stack.gateway()).url;
});
afterAll(async () => {
  await stack.close();
  await redis.stop();
});

const track = async (n: number) => {
  const response = await fetch(`${base}/api/v2/users/track?auth_token=${stack.project.authToken}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ id: `full-${n}`, email: `full-${n}@example.com`, data: { filler: "x".repeat(8_000) } }),
  });
  return { n, status: response.status, retryAfter: response.headers.get("retry-after"), body: await response.json() };
};

describe("Redis at maxmemory", () => {
  it(
    "answers 503 with Retry-After, turns not ready, and recovers with nothing acknowledged lost",
    { timeout: 90_000 },
    async () => {
      const acknowledged: number[] = [];
      const refused: Awaited<ReturnType<typeof track>>[] = [];
      for (let n = 0; n < 3_000 && refused.length < 20; n += 10) {
        for (const reply of await Promise.all(Array.from({ length: 10 }, (_, i) => track(n + i)))) {
          if (reply.status === 200) acknowledged.push(reply.n);
          else refused.push(reply);
        }
      }
      expect(refused.length).toBeGreaterThan(0);
      for (const reply of refused) {
        expect(reply).toMatchObject({
          status: 503,
          retryAfter: "5",
          body: { status: 503, message: "Service Unavailable" },
        });
      }
      const notReady = await fetch(`${base}/readyz`);
      expect(notReady.status).toBe(503);
      expect(((await notReady.json()) as { redis: string }).redis).toMatch(/maxmemory/);

      // A worker started now pauses (Redis refuses the writes that fetching a job takes) ...
      const worker = await stack.worker();
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect((await fetch(`${worker.healthUrl}/readyz`)).status).toBe(503);

      // ... until an operator makes room: then it resumes and drains, and everything is ready again.
      await redis.admin().config("SET", "maxmemory", "256mb");
      const ids = acknowledged.map((n) => `full-${n}`);
      await waitUntilApplied(stack.db.sql, stack.project.id, ids, 30_000);
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      expect((await fetch(`${worker.healthUrl}/readyz`)).status).toBe(200);
      expect((await track(99_999)).status).toBe(200);
    },
  );
});
