import { Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findProfile, insertTopic, recordDeadLetter } from "@cm/db";
import { newTopicValues, profileKeyForId, RefusedInput, visibleProfile, type IdentifyEvent } from "@cm/domain";
import { addProfileOperationsBatch, isCluster, profileOperationsQueue, queueName } from "@cm/queue";
import { applyProfileOperations } from "@cm/app";
import { createWorkerMetrics, queueWorkers } from "@cm/worker";
import { testLogger } from "../support/logs";
import { storedKeyOf } from "../support/profile-operations";
import { testProfileStores } from "../support/profile-stores";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";
import { testRedis } from "../support/redis";

let stack: TestStack;
let stores: ReturnType<typeof testProfileStores>;
beforeAll(async () => {
  stack = await createTestStack("poison");
  stores = testProfileStores(stack.db.sql, stack.config.queuePrefix);
});
afterAll(async () => {
  await stores.close();
  await stack.close();
});

const storedKey = (id: string) => storedKeyOf(stack.db.sql, stack.project.id, id);

function event(id: string, data: Record<string, unknown>): IdentifyEvent {
  return {
    projectId: stack.project.id,
    key: profileKeyForId(id),
    id,
    t: Date.now(),
    updateOnly: false,
    data: data as IdentifyEvent["data"],
  };
}

// Postgres cannot store U+0000 in jsonb: such an event reaches a worker only if something
// bypassed the gateway's validation, and it must not hold up the events queued beside it.
const poison = (id: string) => event(id, { note: "bad\u0000byte" });

describe("a batch holding an event Postgres refuses", () => {
  it("applies every other event and reports the refused one", async () => {
    const events = [
      event("ok-1", { a: 1 }),
      poison("bad-1"),
      event("ok-2", { a: 2 }),
      event("ok-3", { a: 3 }),
      poison("bad-2"),
    ];
    const outcome = await applyProfileOperations(stores, events);
    expect(outcome.applied).toBe(3);
    expect(outcome.poisoned.map((p) => p.operation.id).sort()).toEqual(["bad-1", "bad-2"]);
    for (const id of ["ok-1", "ok-2", "ok-3"]) {
      expect(await findProfile(stack.db.sql, stack.project.id, await storedKey(id)), id).not.toBeNull();
    }
  });

  it("through the queue: the job completes, the event is dead-lettered, the others are applied", async () => {
    await stack.worker();
    const redis = testRedis({ maxRetriesPerRequest: null });
    const queue = profileOperationsQueue(redis, stack.config.queuePrefix);
    try {
      const job = await addProfileOperationsBatch(queue, [event("queued-ok", { plan: "pro" }), poison("queued-bad")]);
      await waitFor("the job to finish", async () => ((await job.getState()) === "completed" ? true : undefined));
      // Kept for the dashboard, as a summary: nobody's data.
      expect((await queue.getJob(job.id as string))?.data).toMatchObject({
        events: [],
        completed: { items: 2, projects: [stack.project.id] },
      });
      const stored = await findProfile(stack.db.sql, stack.project.id, await storedKey("queued-ok"));
      expect(visibleProfile(stored!.state)?.data).toEqual({ plan: "pro" });
      const letters = await stack.db.sql<{ job_id: string; event: string; error: string }[]>`
        SELECT job_id, event, error FROM identify_dead_letters WHERE job_id = ${job.id as string}`;
      expect(letters).toHaveLength(1);
      expect(JSON.parse(letters[0]!.event)).toMatchObject({ id: "queued-bad" });
      expect(letters[0]!.error).toMatch(/unicode|\\u0000|character/i);
      expect(await queue.getFailedCount()).toBe(0);
    } finally {
      await queue.close();
      redis.disconnect();
    }
  });

  it("isolates an event that breaks our own code, not only one Postgres refuses", async () => {
    // Nesting this deep overflows the stack of canonical JSON; the gateway refuses it (past 32
    // levels), but a job queued by an older gateway, or by hand, can still hold one.
    let deep: unknown = "bottom";
    for (let i = 0; i < 20_000; i += 1) deep = { d: deep };
    const outcome = await applyProfileOperations(stores, [
      event("deep-ok-1", { a: 1 }),
      event("deep-bad", { deep }),
      event("deep-ok-2", { a: 2 }),
    ]);
    expect(outcome.applied).toBe(2);
    expect(outcome.poisoned.map((p) => p.operation.id)).toEqual(["deep-bad"]);
    expect(outcome.poisoned[0]!.error).toBeInstanceOf(RefusedInput);
    await recordDeadLetter(stack.db.sql, {
      queue: "identify",
      projectId: stack.project.id,
      jobId: null,
      event: outcome.poisoned[0]!.operation,
      error: "too deep",
    });
  });

  it("keeps data keys named like Object.prototype members when updates of one profile meet in a job", async () => {
    const keys = { toString: "a", constructor: "b", valueOf: "c", hasOwnProperty: "d", ["__proto__"]: "e" };
    const first = { ...event("proto-keys", {}), data: JSON.parse(JSON.stringify(keys)) as IdentifyEvent["data"] };
    const second = {
      ...event("proto-keys", {}),
      t: first.t + 1,
      data: JSON.parse('{"__proto__":"f","toString":"g"}') as IdentifyEvent["data"],
    };
    expect((await applyProfileOperations(stores, [first, second])).applied).toBe(2);
    const stored = await findProfile(stack.db.sql, stack.project.id, await storedKey("proto-keys"));
    expect(JSON.parse(JSON.stringify(visibleProfile(stored!.state)?.data))).toEqual({
      toString: "g",
      constructor: "b",
      valueOf: "c",
      hasOwnProperty: "d",
      ["__proto__"]: "f",
    });
  });

  it("ignores a topic choice whose id is past Postgres' integer range, and applies the rest", async () => {
    const outOfRange = {
      ...event("big-topic", { plan: "pro" }),
      email: "big-topic@example.com",
      topics: [{ id: 3_000_000_000, status: "subscribed" as const }],
    };
    const outcome = await applyProfileOperations(stores, [outOfRange]);
    expect(outcome).toMatchObject({ applied: 1, poisoned: [] });
    expect(outcome.ignoredTopics[0]?.topicIds).toEqual(["3000000000"]);
    const stored = await findProfile(stack.db.sql, stack.project.id, await storedKey("big-topic"));
    expect(visibleProfile(stored!.state)).toMatchObject({
      email: "big-topic@example.com",
      data: { plan: "pro" },
      topics: {},
    });
  });

  it("reports the topic choices that name no topic of the project, and keeps the one that does", async () => {
    const topic = await insertTopic(
      stack.db.sql,
      stack.project.id,
      newTopicValues({ name: "Known topic", default_status: "unsubscribed" }),
    );
    const choices = {
      ...event("some-topics", {}),
      topics: [
        { id: topic.id, status: "subscribed" as const },
        { id: topic.id + 1_000, status: "subscribed" as const },
      ],
    };
    const outcome = await applyProfileOperations(stores, [choices]);
    expect(outcome.ignoredTopics).toEqual([
      { projectId: stack.project.id, key: await storedKey("some-topics"), topicIds: [String(topic.id + 1_000)] },
    ]);
    const stored = await findProfile(stack.db.sql, stack.project.id, await storedKey("some-topics"));
    expect(Object.keys(visibleProfile(stored!.state)?.topics ?? {})).toEqual([String(topic.id)]);
  });

  it("isolates a delete or reidentify Postgres refuses, and applies the rest of the job", async () => {
    // A stamp is a whole number of milliseconds: Postgres refuses another as a bigint.
    const operations = [
      event("beside-bad-delete", { a: 1 }),
      { ...event("x", {}), op: "delete" as const, t: 0.5 },
      { ...event("y", {}), op: "reidentify" as const, newId: "bad", newKey: "i:bad", t: 0.5 },
      { ...event("beside-bad-delete", {}), op: "reidentify" as const, newId: "good", newKey: "i:good" },
    ];
    const outcome = await applyProfileOperations(stores, operations);
    expect(outcome.applied).toBe(2);
    expect(outcome.poisoned.map((p) => [p.operation.op, p.operation.id])).toEqual([
      ["delete", "x"],
      ["reidentify", "y"],
    ]);
    await recordDeadLetter(stack.db.sql, {
      queue: "identify",
      projectId: stack.project.id,
      jobId: null,
      event: operations[1],
      error: "refused",
    });
  });

  it("an outage is not poison: the whole batch is thrown back for a retry", async () => {
    const closed = (await import("@cm/db")).connect("postgres://postgres@127.0.0.1:1/none", { max: 1 });
    await expect(applyProfileOperations({ ...stores, sql: closed }, [event("x", { a: 1 })])).rejects.toMatchObject({
      code: "ECONNREFUSED",
    });
    await closed.end();
  });

  it("a bug in our own code is not poison either: the batch is thrown back, nothing is dead-lettered", async () => {
    const bug = new TypeError("Cannot read properties of undefined (reading 'length')");
    const keyOf = await stores.profileKeys([stack.project.id]);
    const buggy = {
      ...stores,
      profileKeys: async () => (projectId: number, id: string) => {
        if (id === "bug-hit") throw bug;
        return keyOf(projectId, id);
      },
    };
    await expect(applyProfileOperations(buggy, [event("bug-ok", { a: 1 }), event("bug-hit", { a: 2 })])).rejects.toBe(
      bug,
    );
  });

  it("through the queue: a job that hits a bug is tried again until it is applied, never failed or dead-lettered", async () => {
    const redis = testRedis({ maxRetriesPerRequest: null });
    const queue = new Queue<{ n: number }>(queueName("buggy", isCluster(redis)), {
      connection: redis,
      prefix: stack.config.queuePrefix,
    });
    const config = { ...stack.config, jobRetryBaseDelayMs: 5, jobRetryMaxDelayMs: 20 };
    const { createQueueWorker } = queueWorkers(redis.duplicate(), config, testLogger("poison"), createWorkerMetrics());
    let tries = 0;
    const worker = createQueueWorker(
      queue.name,
      async () => {
        tries += 1;
        // The bug is fixed (a new worker rolled out) after the 60th try.
        if (tries <= 60) throw new TypeError("x is not a function");
        return "applied";
      },
      { concurrency: 1, heldUnderWorkerLock: false },
    );
    try {
      // Queued as jobs were before: with 50 attempts, which used to run out.
      const job = await queue.add("j", { n: 1 }, { attempts: 50, backoff: { type: "capped-exponential", delay: 5 } });
      await waitFor(
        "the job to be applied",
        async () => ((await job.getState()) === "completed" ? true : undefined),
        20_000,
      );
      expect(tries).toBe(61);
      expect(await queue.getFailedCount()).toBe(0);
    } finally {
      await worker.close();
      await queue.obliterate({ force: true });
      await queue.close();
      redis.disconnect();
    }
  });
});
