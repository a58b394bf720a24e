import { acknowledgeWrites, ReplicasBehind } from "@cm/queue";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IdempotentReplies } from "../../apps/gateway/src/idempotent-replies";
import { testRedis } from "../support/redis";
import { createTestStack, type TestStack } from "../support/services";

// A gateway that waits for a replica (REDIS_REPLICAS_ACK=1) in front of the shared test Redis,
// which has none: no write is confirmed, so none is answered 200 (docs/operations-redis.md,
// "Replicas and Sentinel"). test/faults/redis-failover.test.ts runs it with a replica.

let stack: TestStack;
let base: string;

beforeAll(async () => {
  stack = await createTestStack("replicas_ack", { redisReplicasAck: { replicas: 1, timeoutMs: 20 } });
  base = (await stack.gateway()).url;
});
afterAll(() => stack.close());

const send = (path: string, body: object) =>
  fetch(`${base}/api/v2${path}?auth_token=${stack.project.authToken}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

describe("REDIS_REPLICAS_ACK on a Redis without replicas", () => {
  it("answers every queued operation 503 with Retry-After, the single calls and the batch", async () => {
    const answers = await Promise.all([
      send("/users/track", { id: "unconfirmed-1" }),
      send("/events/track", { identity: { id: "unconfirmed-2" }, event_name: "Seen" }),
      send("/batch", { batch: [{ type: "identify", id: "unconfirmed-3" }] }),
    ]);
    expect(answers.map((answer) => [answer.status, answer.headers.get("retry-after")])).toEqual([
      [503, "5"],
      [503, "5"],
      [503, "5"],
    ]);
  });

  it("reports the gateway not ready, naming the replicas missing", async () => {
    const response = await fetch(`${base}/readyz`);
    expect(response.status).toBe(503);
    expect((await response.json()).redis).toMatch(/0 replicas in sync, of the 1 REDIS_REPLICAS_ACK requires/);
  });

  it("waits for the replicas before a batch's answer kept for its Idempotency-Key is relied on", async () => {
    const redis = testRedis();
    acknowledgeWrites(redis, 1, 20);
    const replies = new IdempotentReplies(redis, stack.config.queuePrefix, 10);
    try {
      const claim = await replies.claim(stack.project.id, "unconfirmed-answer", "{}", "json");
      if (claim.state !== "claimed") throw new Error(`claimed: ${claim.state}`);
      const reply = { status: 200, message: "Success.", results: [] };
      await expect(claim.settle(reply)).rejects.toBeInstanceOf(ReplicasBehind);
      // Kept on the primary all the same: a retry that reaches it is answered.
      expect(await replies.claim(stack.project.id, "unconfirmed-answer", "{}", "json")).toEqual({
        state: "answered",
        reply,
      });
    } finally {
      redis.disconnect();
    }
  });
});
