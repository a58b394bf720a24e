import { afterAll, describe, expect, it } from "vitest";
import { RateLimiter } from "../../apps/gateway/src/rate-limit/rate-limiter";
import { testLogger } from "../support/logs";
import { createTestQueuePrefix } from "../support/queue";
import { testRedis } from "../support/redis";

// The shared token bucket, taken in leases, on the real Redis; the gateway-level behaviour
// (429 bodies and headers across two gateways) is in rate-limits.test.ts.

const keys = createTestQueuePrefix("rate_limiter");
const redis = testRedis();
afterAll(async () => {
  await keys.cleanup();
  redis.disconnect();
});

const limiter = (rate: number, burst: number) =>
  new RateLimiter(redis, keys.prefix, { rate, burst }, testLogger("rate_limiter"));

const allowedOf = async (taken: ReturnType<RateLimiter["take"]>[]) =>
  (await Promise.all(taken)).filter((verdict) => verdict.allowed).length;

describe("RateLimiter", () => {
  it("grants the whole burst to requests that arrive together, while one lease is on its way", async () => {
    // A lease of one token (2% of the rate, at least one): the requests that wait for it must
    // lease again. A token a minute refills nothing while they do, however slow the machine.
    const gateway = limiter(1 / 60, 20);
    expect(await allowedOf(Array.from({ length: 20 }, () => gateway.take(1)))).toBe(20);
    expect(await allowedOf([gateway.take(1)])).toBe(0);
  });

  it("shares one bucket between gateways, and never grants past it", async () => {
    const [first, second] = [limiter(1_000, 300), limiter(1_000, 300)];
    const started = performance.now();
    const taken = Array.from({ length: 400 }, (_, n) => (n % 2 === 0 ? first : second).take(2));
    const allowed = await allowedOf(taken);
    // The burst, plus what refilled at 1,000/s while the leases were taken (a loaded machine
    // takes longer, and may rightly grant more).
    const refilled = Math.ceil(performance.now() - started);
    expect(allowed).toBeGreaterThanOrEqual(300);
    expect(allowed).toBeLessThanOrEqual(Math.min(400, 300 + refilled));
  });

  it("keeps projects apart", async () => {
    const gateway = limiter(1 / 60, 5);
    expect(await allowedOf(Array.from({ length: 10 }, () => gateway.take(3)))).toBe(5);
    expect(await allowedOf(Array.from({ length: 5 }, () => gateway.take(4)))).toBe(5);
  });
});
