import type { ProfileOperation } from "@cm/domain";
import { addProfileOperationsBatch, profileOperationsQueue } from "@cm/queue";
import { afterAll, describe, expect, it } from "vitest";
import { createTestQueuePrefix } from "../support/queue";
import { testRedis } from "../support/redis";

// A write the gateway holds through a failover is tried again as the same job (the micro-batch's
// id, docs/operations-redis.md "Holding writes through a failover"): a try that landed before its
// connection failed makes the next one a no-op, on the real Redis (BullMQ's job ids).

const queuePrefix = createTestQueuePrefix("held_write_retry");
const redis = testRedis();
const queue = profileOperationsQueue(redis, queuePrefix.prefix);
afterAll(async () => {
  await queue.close();
  redis.disconnect();
  await queuePrefix.cleanup();
});

const operation: ProfileOperation = { projectId: 1, key: "i:held", id: "held", t: 1, updateOnly: false };

describe("a batch written again with its id", () => {
  it("is queued once", async () => {
    const first = await addProfileOperationsBatch(queue, [operation], { jobId: "batch-tried-twice" });
    const again = await addProfileOperationsBatch(queue, [operation], { jobId: "batch-tried-twice" });
    expect(again.id).toBe(first.id);
    expect(await queue.getJobCounts("waiting")).toEqual({ waiting: 1 });
  });
});
