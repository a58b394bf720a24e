import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { IdentifyEvent } from "@cm/domain";
import { eventShard, intakeShard, operationShard, queueName } from "@cm/queue";
import { MicroBatcher, ShardedBatcher } from "../../apps/gateway/src/micro-batcher";

describe("a user's intake shard (INTAKE_QUEUE_SHARDS)", () => {
  it("is one of the shards, the same at every call, and the only one with a single shard", () => {
    fc.assert(
      fc.property(fc.nat(), fc.string(), fc.integer({ min: 1, max: 64 }), (projectId, userId, shards) => {
        const shard = intakeShard(projectId, userId, shards);
        expect(shard).toBeGreaterThanOrEqual(0);
        expect(shard).toBeLessThan(shards);
        expect(intakeShard(projectId, userId, shards)).toBe(shard);
        expect(intakeShard(projectId, userId, 1)).toBe(0);
      }),
    );
  });

  it("is FNV-1a of `project:user`, so that every release and every door agrees on it", () => {
    // Values of the published FNV-1a (32 bits) of "1:ada" and "7:user-42", modulo the shards:
    // a change here moves queued users to other shards, and their order with them.
    expect(intakeShard(1, "ada", 3)).toBe(0x454c2602 % 3);
    expect(intakeShard(7, "user-42", 8)).toBe(0xc7dd7de4 % 8);
  });

  it("is the same for a user's profile operations and tracked events", () => {
    fc.assert(
      fc.property(fc.nat(), fc.string(), fc.integer({ min: 1, max: 64 }), (projectId, id, shards) => {
        expect(operationShard({ projectId, id }, shards)).toBe(eventShard({ projectId, userId: id }, shards));
      }),
    );
  });

  it("spreads users about evenly", () => {
    const counts = [0, 0, 0, 0];
    for (let n = 0; n < 4_000; n++) counts[intakeShard(1, `user-${n}`, 4)]! += 1;
    for (const count of counts) expect(count).toBeGreaterThan(800);
  });
});

describe("queue names", () => {
  it("are hash tags on a Redis Cluster, each shard its own, and keep the previous names off one", () => {
    expect(queueName("identify", false)).toBe("identify");
    expect(queueName("identify", true)).toBe("{identify}");
    expect(queueName("identify", true, 2)).toBe("{identify-2}");
    expect(queueName("identify", false, 2)).toBe("{identify-2}");
  });
});

describe("ShardedBatcher", () => {
  it("writes each user's items to their shard's batcher, in the order they came", async () => {
    const writes: string[][][] = [[], [], []];
    const batcher = new ShardedBatcher<IdentifyEvent>(
      writes.map(
        (written) =>
          new MicroBatcher<IdentifyEvent>(
            async (items) => {
              written.push(items.map((item) => `${item.id}@${item.t}`));
            },
            { maxBatchSize: 2, maxWaitMs: 1 },
          ),
      ),
      operationShard,
    );
    const users = Array.from({ length: 12 }, (_, n) => `user-${n}`);
    const items = [1, 2, 3].flatMap((t) =>
      users.map((id): IdentifyEvent => ({ projectId: 1, key: `i:${id}`, id, t, updateOnly: false })),
    );
    await Promise.all(items.map((item) => batcher.enqueue(item)));
    await batcher.drain();
    for (const id of users) {
      const shard = operationShard({ projectId: 1, id }, 3);
      writes.forEach((written, n) => {
        const mine = written.flat().filter((item) => item.startsWith(`${id}@`));
        expect(mine).toEqual(n === shard ? [`${id}@1`, `${id}@2`, `${id}@3`] : []);
      });
    }
  });
});
