import { setTimeout as sleep } from "node:timers/promises";
import { consumerConnection, eventsQueues, profileOperationsQueues, type RedisConnection } from "@cm/queue";
import type { Queue } from "bullmq";
import { afterEach, describe, expect, it } from "vitest";
import { failoverSummary, finishAfterPromotion, sendLoad, type Load } from "../support/failover-load";
import { startPrivateCluster, type PrivateCluster } from "../support/private-cluster";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";

// docs/operations-redis.md, "Redis Cluster": a cluster of three primaries and a replica each
// (private redis-servers on loopback ports), the intake over three queue shards. Identifies,
// events and batches arrive at a gateway, whose worker waits (the queues are paused) so that every
// acknowledged operation is still in Redis when a primary dies: the one serving the first shard
// of the identify queue is killed with SIGKILL, the cluster promotes its replica, the gateway and
// the worker follow it by themselves, and the old primary comes back as its replica. With
// REDIS_REPLICAS_ACK=1 (a WAIT on the node each job is written to) every operation answered 200
// is applied, none twice; what was sent while the shard had no primary was held by the gateway
// (REDIS_FAILOVER_HOLD_MS) and written to the promoted one, or answered 503 if no replica could
// confirm it, never 500.

const SETTLE_MS = 2_000;
const SHARDS = 3;

interface Run {
  cluster: PrivateCluster;
  stack?: TestStack;
  admin?: RedisConnection;
  queues: Queue[];
}

let run: Run | null = null;
afterEach(async () => {
  if (run === null) return;
  await Promise.all(run.queues.map((queue) => queue.close()));
  run.admin?.disconnect();
  await run.stack?.close();
  await run.cluster.stop();
  run = null;
});

describe("a Redis Cluster primary killed and its replica promoted, under load", () => {
  it("with REDIS_REPLICAS_ACK=1, applies every operation answered 200, none twice", { timeout: 180_000 }, async () => {
    const cluster = await startPrivateCluster();
    run = { cluster, queues: [] };
    const stack = await createTestStack("redis_cluster_failover", {
      redisUrl: `redis://127.0.0.1:${cluster.nodes[0]!.port}`,
      redisCluster: { nodes: cluster.addresses },
      intakeQueueShards: SHARDS,
      redisReplicasAck: { replicas: 1, timeoutMs: 200 },
      redisDurability: "require",
    });
    run.stack = stack;
    const admin = consumerConnection(stack.config);
    admin.on("error", () => {});
    run.admin = admin;
    const { queuePrefix } = stack.config;
    const queues = [
      ...profileOperationsQueues(admin, queuePrefix, SHARDS),
      ...eventsQueues(admin, queuePrefix, SHARDS),
    ];
    for (const queue of queues) queue.on("error", () => {});
    run.queues = queues;
    await Promise.all(queues.map((queue) => queue.pause()));
    const base = (await stack.gateway()).url;
    await stack.worker();

    const running = { on: true, promotedAt: Infinity };
    const sent: Load = { identified: [], tracked: [], statuses: {}, acceptedAfterPromotion: 0, slowestMs: 0 };
    const load = sendLoad(base, stack.project.authToken, "cluster", running, sent);
    await sleep(SETTLE_MS);
    const shardKey = `${queuePrefix}:${queues[0]!.name}:wait`;
    const victim = await cluster.primaryOf(shardKey);
    const witness = cluster.nodes.find((node) => node !== victim)!;
    await victim.kill();
    const killedAt = Date.now();
    await waitFor(
      "the cluster to promote the replica",
      async () => ((await cluster.primaryOf(shardKey, witness.port)) !== victim ? true : undefined),
      30_000,
    );
    running.promotedAt = Date.now();
    const promotedAfterMs = running.promotedAt - killedAt;
    // Restarted with its nodes.conf, it rejoins as the promoted node's replica.
    await victim.start();
    const outcome = await finishAfterPromotion(load, running, sent, queues, stack);

    console.log(failoverSummary("cluster failover with REDIS_REPLICAS_ACK=1", outcome, sent, promotedAfterMs));
    expect(outcome.lost).toEqual([]);
    expect(outcome.twice).toEqual([]);
    // Held while the shard's node was gone (or the cluster down): latency, never 500. 503: no
    // replica confirmed in time (the promoted node has none until the old primary rejoins).
    expect(Object.keys(sent.statuses).filter((status) => !["200", "503"].includes(status))).toEqual([]);
    expect(sent.acceptedAfterPromotion).toBeGreaterThan(0);
  });
});
