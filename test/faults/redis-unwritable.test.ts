import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkRedisReady } from "@cm/queue";
import { DURABLE_REDIS, startPrivateRedis, type PrivateRedis } from "../support/private-redis";
import { waitFor } from "../support/wait";

// docs/operations-redis.md, "What the processes check": readiness asks whether the Redis a
// gateway writes to takes writes, not only whether it answers. A node left a replica (a URL on a
// primary since demoted) answers every read and refuses every write (READONLY); a primary short of
// its min-replicas-to-write refuses them too (NOREPLICAS). Both must read as not ready.

let primary: PrivateRedis;
let replica: PrivateRedis;
const connections: Redis[] = [];

const connect = (url: string) => {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  connections.push(redis);
  return redis;
};

beforeAll(async () => {
  primary = await startPrivateRedis(DURABLE_REDIS);
  replica = await startPrivateRedis([...DURABLE_REDIS, "--replicaof", "127.0.0.1", String(primary.port)]);
  const admin = primary.admin();
  await waitFor("the replica in sync", async () =>
    /^slave0:.*state=online/m.test(await admin.info("replication")) ? true : undefined,
  );
});
afterAll(async () => {
  for (const redis of connections) redis.disconnect();
  await Promise.all([replica.stop(), primary.stop()]);
});

describe("readiness of a Redis that refuses writes", () => {
  it("is ready on the primary, not on its replica, which refuses writes", async () => {
    await expect(checkRedisReady(connect(primary.url), "require")).resolves.toBeUndefined();
    const onReplica = connect(replica.url);
    await expect(onReplica.set("probe", "1")).rejects.toThrow(/READONLY/);
    await expect(checkRedisReady(onReplica, "require")).rejects.toThrow(/replica: it refuses writes \(READONLY\)/);
  });

  it("is not ready while the primary has fewer good replicas than its min-replicas-to-write", async () => {
    const redis = connect(primary.url);
    await redis.config("SET", "min-replicas-to-write", "2");
    try {
      await expect(redis.set("probe", "1")).rejects.toThrow(/NOREPLICAS/);
      await expect(checkRedisReady(redis, "require")).rejects.toThrow(/NOREPLICAS/);
    } finally {
      await redis.config("SET", "min-replicas-to-write", "0");
    }
    await expect(checkRedisReady(redis, "require")).resolves.toBeUndefined();
  });
});
