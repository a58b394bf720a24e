import { startGateway } from "@cm/gateway";
import { redisDurabilityProblems } from "@cm/queue";
import { startWorker } from "@cm/worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testLogger } from "../support/logs";
import { startPrivateRedis, type PrivateRedis } from "../support/private-redis";
import { createTestStack, type TestStack } from "../support/services";

// A Redis that can lose accepted identifies (no AOF, an evicting policy) stops gateways and
// workers from starting when REDIS_DURABILITY=require (the default), and is only logged with "warn".

let redis: PrivateRedis;
let stack: TestStack;

beforeAll(async () => {
  redis = await startPrivateRedis(["--appendonly", "no", "--maxmemory-policy", "allkeys-lru"]);
  stack = await createTestStack("redis_durability", { redisUrl: redis.url });
});
afterAll(async () => {
  await stack.close();
  await redis.stop();
});

describe("Redis durability check", () => {
  it("names what could lose identifies", async () => {
    const problems = await redisDurabilityProblems(redis.admin());
    expect(problems).toHaveLength(2);
    expect(problems?.join("; ")).toMatch(/appendonly.*maxmemory-policy is allkeys-lru/);
  });

  it("refuses to start a gateway or a worker when durability is required", async () => {
    const config = { ...stack.config, redisDurability: "require" as const };
    await expect(startGateway(config, testLogger("redis_durability"))).rejects.toThrow(/REDIS_DURABILITY=warn/);
    await expect(startWorker(config, testLogger("redis_durability"))).rejects.toThrow(/appendonly is not yes/);
  });

  it("starts and stays ready with a warning when told to warn", async () => {
    const gateway = await stack.gateway();
    expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);
  });

  it("finds nothing to say once Redis runs as required", async () => {
    const admin = redis.admin();
    await admin.config("SET", "appendonly", "yes");
    await admin.config("SET", "maxmemory-policy", "noeviction");
    expect(await redisDurabilityProblems(admin)).toEqual([]);
  });
});
