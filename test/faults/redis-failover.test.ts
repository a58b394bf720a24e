import { consumerConnection, eventsQueues, profileOperationsQueues } from "@cm/queue";
import type { Queue } from "bullmq";
import type { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { startReplicatedRedis, type ReplicatedRedis } from "../support/private-sentinels";
import { failoverSummary, finishAfterPromotion, sendLoad, type Load } from "../support/failover-load";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";

// docs/operations-redis.md, "Replicas and Sentinel": a primary, its replica and three Sentinels
// (all private redis-servers on loopback ports). Identifies, events and batches arrive at a
// gateway, whose worker waits (the queues are paused) so that every acknowledged operation is
// still in Redis when the primary dies. The replication link lags for half a second, then the
// primary is killed with SIGKILL: the Sentinels promote the replica, the gateway and the worker
// find it by themselves, and the old primary comes back as its replica. With REDIS_REPLICAS_ACK=1
// every operation answered 200 is applied, none twice; what was sent while no primary answered
// was held by the gateway (REDIS_FAILOVER_HOLD_MS) and written to the promoted one, or answered
// 503 if its replica could not confirm it, never 500. Without the setting, the operations
// answered 200 while the link lagged are lost.

const SETTLE_MS = 2_000;
const LAG_MS = 500;

interface Run {
  redis: ReplicatedRedis;
  stack: TestStack;
  admin: Redis;
  queues: Queue[];
}

let run: Run | null = null;
afterEach(async () => {
  if (run === null) return;
  await Promise.all(run.queues.map((queue) => queue.close()));
  run.admin.disconnect();
  await run.stack.close();
  await run.redis.stop();
  run = null;
});

/** The failover under load, with a gateway and a worker that wait for `replicas` replicas. */
async function failover(label: string, replicas: number) {
  const redis = await startReplicatedRedis();
  const stack = await createTestStack(label, {
    redisSentinel: redis.sentinel,
    redisReplicasAck: { replicas, timeoutMs: 200 },
    redisDurability: "require",
  });
  const admin = consumerConnection(stack.config);
  admin.on("error", () => {});
  const { queuePrefix, intakeQueueShards } = stack.config;
  const queues = [
    ...profileOperationsQueues(admin, queuePrefix, intakeQueueShards),
    ...eventsQueues(admin, queuePrefix, intakeQueueShards),
  ];
  for (const queue of queues) queue.on("error", () => {});
  run = { redis, stack, admin, queues };
  await Promise.all(queues.map((queue) => queue.pause()));
  const base = (await stack.gateway()).url;
  await stack.worker();

  const running = { on: true, promotedAt: Infinity };
  const sent: Load = { identified: [], tracked: [], statuses: {}, acceptedAfterPromotion: 0, slowestMs: 0 };
  const load = sendLoad(base, stack.project.authToken, label, running, sent);
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  redis.link.hold();
  await new Promise((resolve) => setTimeout(resolve, LAG_MS));
  await redis.primary.kill();
  const killedAt = Date.now();
  await redis.link.cut();
  await waitFor(
    "the Sentinels to promote the replica",
    async () => ((await redis.primaryPort()) === redis.replica.port ? true : undefined),
    30_000,
  );
  running.promotedAt = Date.now();
  const promotedAfterMs = running.promotedAt - killedAt;
  // Restarted as the new primary's replica, as a Sentinel-aware start (k8s/redis) restarts it.
  await redis.primary.start(["--replicaof", "127.0.0.1", String(redis.replica.port)]);
  return { ...(await finishAfterPromotion(load, running, sent, queues, stack)), load: sent, promotedAfterMs };
}

describe("Redis primary killed and a replica promoted by Sentinel, under load", () => {
  it("with REDIS_REPLICAS_ACK=1, applies every operation answered 200, none twice", { timeout: 180_000 }, async () => {
    const outcome = await failover("redis_failover_ack", 1);
    console.log(failoverSummary("failover with REDIS_REPLICAS_ACK=1", outcome, outcome.load, outcome.promotedAfterMs));
    expect(outcome.lost).toEqual([]);
    expect(outcome.twice).toEqual([]);
    // Held while no primary answered, then written to the promoted one: latency, never 500. 503:
    // sent while the replica lagged, or before the old primary came back as the new one's replica.
    expect(Object.keys(outcome.load.statuses).filter((status) => !["200", "503"].includes(status))).toEqual([]);
    expect(outcome.load.statuses[503]).toBeGreaterThan(0);
    expect(outcome.load.acceptedAfterPromotion).toBeGreaterThan(0);
  });

  it("without it, loses the operations answered 200 while the replica lagged", { timeout: 180_000 }, async () => {
    const outcome = await failover("redis_failover_no_ack", 0);
    console.log(failoverSummary("failover with REDIS_REPLICAS_ACK=0", outcome, outcome.load, outcome.promotedAfterMs));
    expect(outcome.lost.length).toBeGreaterThan(0);
  });
});
