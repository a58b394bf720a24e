import { describe, expect, it } from "vitest";
import { parseIdentifyRequest, problemText } from "@cm/domain";
import { loadConfig } from "@cm/config";

/** The reason an identify body is refused for, or null when it is accepted. */
function refusal(body: unknown): string | null {
  const parsed = parseIdentifyRequest(body, { projectId: 1, receivedAt: Date.now() });
  return parsed.ok ? null : problemText(parsed.problems);
}

// Without the typia transform, typia.createValidate() throws at the call site instead of
// returning a validator, so these tests fail when the build or the test runner lost it.
describe("typia transform", () => {
  it("rejects an identify body whose fields have the wrong types", () => {
    expect(refusal({ id: { nested: true }, email: "ada@example.com" })).toMatch(/^id /);
    expect(refusal({ id: "u1", channels: [{ type: "push" }] })).toMatch(/channels\[0\]\.address/);
    expect(refusal({ id: "u1", data: [1, 2] })).toMatch(/data/);
    expect(refusal({ id: "u1", preferences: { topics: [{ id: 1, status: "maybe" }] } })).toMatch(/status/);
  });

  it("accepts a well-formed identify body", () => {
    expect(refusal({ id: 7, email: "ada@example.com", data: { a: [1, { b: null }] } })).toBeNull();
  });

  it("validates the configuration at start-up", () => {
    expect(() => loadConfig({ PORT: "seventy" })).toThrow(/port/);
    expect(loadConfig({}).port).toBe(3000);
    expect(loadConfig({}).retiredSettings).toEqual([]);
    expect(loadConfig({ DEAD_LETTER_RETENTION_DAYS: "30" }).retiredSettings).toEqual([
      expect.stringMatching(/^DEAD_LETTER_RETENTION_DAYS is no longer read: .*DEAD_LETTER_WARN_DAYS/),
    ]);
  });

  it("reads each micro-batcher's settings, and the IDENTIFY_* names they replace for both, named as deprecated", () => {
    const defaults = { size: 500, maxBytes: 1024 * 1024, waitMs: 2, writeTimeoutMs: 2_000 };
    expect(loadConfig({})).toMatchObject({
      profileOperationsBatch: defaults,
      eventsBatch: defaults,
      deprecatedSettings: [],
    });
    expect(
      loadConfig({
        PROFILE_OPERATIONS_BATCH_SIZE: "100",
        PROFILE_OPERATIONS_WRITE_TIMEOUT_MS: "500",
        EVENTS_BATCH_WAIT_MS: "5",
        EVENTS_BATCH_MAX_BYTES: "2048",
        EVENTS_WRITE_TIMEOUT_MS: "700",
      }),
    ).toMatchObject({
      profileOperationsBatch: { ...defaults, size: 100, writeTimeoutMs: 500 },
      eventsBatch: { ...defaults, maxBytes: 2048, waitMs: 5, writeTimeoutMs: 700 },
      deprecatedSettings: [],
    });
    const old = loadConfig({
      IDENTIFY_BATCH_SIZE: "50",
      IDENTIFY_BATCH_WAIT_MS: "7",
      IDENTIFY_WRITE_TIMEOUT_MS: "900",
      EVENTS_BATCH_WAIT_MS: "3",
      EVENTS_WRITE_TIMEOUT_MS: "300",
    });
    expect(old).toMatchObject({
      profileOperationsBatch: { ...defaults, size: 50, waitMs: 7, writeTimeoutMs: 900 },
      eventsBatch: { ...defaults, size: 50, waitMs: 3, writeTimeoutMs: 300 },
    });
    expect(old.deprecatedSettings).toEqual([
      "IDENTIFY_BATCH_SIZE is deprecated: set PROFILE_OPERATIONS_BATCH_SIZE and EVENTS_BATCH_SIZE instead",
      "IDENTIFY_BATCH_WAIT_MS is deprecated: set PROFILE_OPERATIONS_BATCH_WAIT_MS and EVENTS_BATCH_WAIT_MS instead",
      "IDENTIFY_WRITE_TIMEOUT_MS is deprecated: set PROFILE_OPERATIONS_WRITE_TIMEOUT_MS and EVENTS_WRITE_TIMEOUT_MS instead",
    ]);
    expect(() => loadConfig({ IDENTIFY_BATCH_SIZE: "0" })).toThrow(/profileOperationsBatch\.size/);
    expect(() => loadConfig({ IDENTIFY_WRITE_TIMEOUT_MS: "10" })).toThrow(/profileOperationsBatch\.writeTimeoutMs/);
  });

  it("reads where the Sentinels are and how many replicas a job write waits for", () => {
    expect(loadConfig({})).toMatchObject({ redisReplicasAck: { replicas: 0, timeoutMs: 500 } });
    expect(loadConfig({}).redisSentinel).toBeUndefined();
    expect(
      loadConfig({
        REDIS_SENTINELS: "sentinel-0:26379, [::1]:26380",
        REDIS_SENTINEL_PASSWORD: "s3cret",
        REDIS_REPLICAS_ACK: "1",
        REDIS_REPLICAS_ACK_TIMEOUT_MS: "250",
      }),
    ).toMatchObject({
      redisSentinel: {
        sentinels: [
          { host: "sentinel-0", port: 26379 },
          { host: "::1", port: 26380 },
        ],
        name: "mymaster",
        password: "s3cret",
      },
      redisReplicasAck: { replicas: 1, timeoutMs: 250 },
    });
    expect(loadConfig({ REDIS_SENTINELS: "a:1", REDIS_SENTINEL_NAME: "cm" }).redisSentinel?.name).toBe("cm");
    expect(() => loadConfig({ REDIS_SENTINELS: "sentinel-0" })).toThrow(
      /REDIS_SENTINELS: "sentinel-0" is not host:port/,
    );
    expect(() => loadConfig({ REDIS_SENTINELS: "a:70000" })).toThrow(/redisSentinel\.sentinels\[0\]\.port/);
    expect(() => loadConfig({ REDIS_REPLICAS_ACK: "-1" })).toThrow(/redisReplicasAck\.replicas/);
    // Waiting twice the timeout (the WAIT in flight, then its own) must end before the write's own timeout.
    expect(() => loadConfig({ REDIS_REPLICAS_ACK: "1", REDIS_REPLICAS_ACK_TIMEOUT_MS: "1000" })).toThrow(
      /REDIS_REPLICAS_ACK_TIMEOUT_MS \(1000\) must be under half of PROFILE_OPERATIONS_WRITE_TIMEOUT_MS \(2000\)/,
    );
    expect(loadConfig({ REDIS_REPLICAS_ACK_TIMEOUT_MS: "1000" }).redisReplicasAck.timeoutMs).toBe(1000);
  });

  it("reads how long a queue write is held through a failover", () => {
    expect(loadConfig({}).redisFailoverHoldMs).toBe(8_000);
    expect(loadConfig({ REDIS_FAILOVER_HOLD_MS: "0" }).redisFailoverHoldMs).toBe(0);
    expect(() => loadConfig({ REDIS_FAILOVER_HOLD_MS: "90000" })).toThrow(/redisFailoverHoldMs/);
  });

  it("reads a Redis Cluster's nodes and the intake's shards", () => {
    expect(loadConfig({})).toMatchObject({ redisCluster: undefined, intakeQueueShards: 1 });
    expect(
      loadConfig({
        REDIS_CLUSTER_NODES: "redis-0:6379,[::1]:7001",
        INTAKE_QUEUE_SHARDS: "3",
        REDIS_URL: "redis://:pw@x",
      }),
    ).toMatchObject({
      redisCluster: {
        nodes: [
          { host: "redis-0", port: 6379 },
          { host: "::1", port: 7001 },
        ],
      },
      intakeQueueShards: 3,
    });
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: "redis-0" })).toThrow(
      /REDIS_CLUSTER_NODES: "redis-0" is not host:port/,
    );
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: "a:1", REDIS_SENTINELS: "b:2" })).toThrow(/set one or the other/);
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: "a:1", REDIS_URL: "redis://a:1/2" })).toThrow(/database 0 only/);
    expect(loadConfig({ REDIS_CLUSTER_NODES: "a:1", REDIS_URL: "redis://a:1/0" }).redisCluster).toBeDefined();
    expect(() => loadConfig({ INTAKE_QUEUE_SHARDS: "0" })).toThrow(/intakeQueueShards/);
    expect(() => loadConfig({ INTAKE_QUEUE_SHARDS: "65" })).toThrow(/intakeQueueShards/);
  });
});
