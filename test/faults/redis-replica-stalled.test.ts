import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DURABLE_REDIS, startPrivateRedis, type PrivateRedis } from "../support/private-redis";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";

// docs/operations-redis.md, "What the processes check": a gateway with REDIS_REPLICAS_ACK=1 in
// front of a private primary and its replica. The replica is stalled (SIGSTOP): its link stays
// `online` for Redis until repl-timeout (60 s), but no write can be acknowledged, so the gateway
// must report not ready within seconds, and ready again once the replica is resumed (SIGCONT).

// The replica's silence that readiness notices (REPLICA_SILENT_LIMIT_S, 2 s, then a second of
// INFO's rounding), with room for a busy machine; far below repl-timeout's 60 s.
const NOTICED_WITHIN_MS = 15_000;

let primary: PrivateRedis;
let replica: PrivateRedis;
let stack: TestStack;
let base: string;

beforeAll(async () => {
  primary = await startPrivateRedis(DURABLE_REDIS);
  replica = await startPrivateRedis([...DURABLE_REDIS, "--replicaof", "127.0.0.1", String(primary.port)]);
  const admin = primary.admin();
  await waitFor("the replica in sync", async () =>
    /^slave0:.*state=online/m.test(await admin.info("replication")) ? true : undefined,
  );
  stack = await createTestStack("redis_replica_stalled", {
    redisUrl: primary.url,
    redisReplicasAck: { replicas: 1, timeoutMs: 200 },
  });
  base = (await stack.gateway()).url;
});
afterAll(async () => {
  replica.resume();
  await stack.close();
  await Promise.all([replica.stop(), primary.stop()]);
});

const readiness = async () => {
  const response = await fetch(`${base}/readyz`);
  return { status: response.status, body: (await response.json()) as { redis: string } };
};

const identify = (id: string) =>
  fetch(`${base}/api/v2/users/track?auth_token=${stack.project.authToken}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ id }),
  });

describe("a replica stalled while writes wait for it (REDIS_REPLICAS_ACK=1)", () => {
  it("turns the gateway not ready within seconds, and ready again once the replica acknowledges", async () => {
    await waitFor("the gateway ready", async () => ((await readiness()).status === 200 ? true : undefined));
    expect((await identify("before-stall")).status).toBe(200);

    replica.pause();
    const stalledAt = Date.now();
    const notReady = await waitFor(
      "the gateway not ready",
      async () => {
        const answer = await readiness();
        return answer.status === 503 ? answer : undefined;
      },
      NOTICED_WITHIN_MS,
    );
    const noticedAfterMs = Date.now() - stalledAt;
    expect(notReady.body.redis).toMatch(/0 replicas in sync, of the 1 REDIS_REPLICAS_ACK requires/);
    const refused = await identify("during-stall");
    expect([refused.status, refused.headers.get("retry-after")]).toEqual([503, "5"]);

    replica.resume();
    const resumedAt = Date.now();
    await waitFor(
      "the gateway ready again",
      async () => ((await readiness()).status === 200 ? true : undefined),
      NOTICED_WITHIN_MS,
    );
    const readyAfterMs = Date.now() - resumedAt;
    expect((await identify("after-stall")).status).toBe(200);
    console.log(`replica stalled: not ready after ${noticedAfterMs} ms, ready again ${readyAfterMs} ms after SIGCONT`);
  });
});
