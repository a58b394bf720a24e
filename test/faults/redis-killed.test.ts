import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DURABLE_REDIS, startPrivateRedis, type PrivateRedis } from "../support/private-redis";
import { createTestStack, type TestStack } from "../support/services";
import { waitUntilApplied } from "../support/applied";

// Redis run as docs/operations-redis.md requires (AOF, appendfsync everysec) and killed with
// SIGKILL while identifies arrive and wait in the queue: once it is back, every identify that
// was answered 200 is applied. Those sent while it is down are held by the gateway
// (REDIS_FAILOVER_HOLD_MS) and written once it is back, or answered 503 past the hold: never 500.
// (Without AOF, the same run loses every identify queued before the kill.)

let redis: PrivateRedis;
let stack: TestStack;
let base: string;

beforeAll(async () => {
  redis = await startPrivateRedis(DURABLE_REDIS);
  stack = await createTestStack("redis_killed", { redisUrl: redis.url, redisDurability: "require" });
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
    body: JSON.stringify({ id: `killed-${n}`, data: { n } }),
  });
  return { n, status: response.status };
};

describe("Redis killed under load", () => {
  it("loses no acknowledged identify", { timeout: 90_000 }, async () => {
    const acknowledged: number[] = [];
    const statuses = new Set<number>();
    let sent = 0;
    const send = async (until: number) => {
      while (sent < until) {
        const batch = Array.from({ length: 10 }, () => track(sent++));
        for (const reply of await Promise.all(batch)) {
          statuses.add(reply.status);
          if (reply.status === 200) acknowledged.push(reply.n);
        }
      }
    };
    // No worker yet: every acknowledged identify is still in Redis when it dies.
    await send(1_000);
    const load = send(3_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await redis.kill();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await redis.start();
    await load;
    await stack.worker();
    await send(3_500);

    expect([...statuses].filter((status) => ![200, 503].includes(status))).toEqual([]);
    const ids = acknowledged.map((n) => `killed-${n}`);
    await waitUntilApplied(stack.db.sql, stack.project.id, ids, 60_000);
  });
});
