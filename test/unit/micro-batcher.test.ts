import { describe, expect, it } from "vitest";
import type { IdentifyEvent } from "@cm/domain";
import { MicroBatcher, QueueWritesBackedUp, QueueWriteTimedOut } from "../../apps/gateway/src/micro-batcher";

const event = (n: number): IdentifyEvent => ({ projectId: 1, key: `i:${n}`, id: String(n), t: n, updateOnly: false });

describe("MicroBatcher", () => {
  it("writes concurrent events together, in one write, once the wait elapses", async () => {
    const writes: number[][] = [];
    const batcher = new MicroBatcher<IdentifyEvent>(
      async (events) => {
        writes.push(events.map((e) => e.t));
      },
      { maxBatchSize: 100, maxWaitMs: 5 },
    );
    await Promise.all([1, 2, 3].map((n) => batcher.enqueue(event(n))));
    expect(writes).toEqual([[1, 2, 3]]);
  });

  it("writes as soon as a batch is full", async () => {
    const writes: number[][] = [];
    const batcher = new MicroBatcher<IdentifyEvent>(
      async (events) => {
        writes.push(events.map((e) => e.t));
      },
      { maxBatchSize: 2, maxWaitMs: 60_000 },
    );
    await Promise.all([1, 2, 3, 4].map((n) => batcher.enqueue(event(n))));
    expect(writes).toEqual([
      [1, 2],
      [3, 4],
    ]);
  });

  it("never writes more bytes of bodies in one batch than allowed, unless one body alone is larger", async () => {
    const writes: number[][] = [];
    const batcher = new MicroBatcher<IdentifyEvent>(
      async (events) => {
        writes.push(events.map((e) => e.t));
      },
      { maxBatchSize: 500, maxBatchBytes: 1000, maxWaitMs: 60_000 },
    );
    const sizes = [400, 400, 400, 1500, 100, 900, 50];
    await Promise.all(
      sizes.map((bytes, n) => batcher.enqueue(event(n), bytes).then(() => undefined)).concat([batcher.drain()]),
    );
    expect(writes).toEqual([[0, 1], [2], [3], [4, 5], [6]]);
  });

  it("settles each caller with the write that holds its event, and fails exactly a failed write's callers", async () => {
    let call = 0;
    const batcher = new MicroBatcher<IdentifyEvent>(
      async () => {
        call += 1;
        if (call === 2) throw new Error("redis down");
      },
      { maxBatchSize: 2, maxWaitMs: 60_000 },
    );
    const outcomes = await Promise.allSettled([1, 2, 3, 4, 5, 6].map((n) => batcher.enqueue(event(n))));
    expect(outcomes.map((o) => o.status)).toEqual([
      "fulfilled",
      "fulfilled",
      "rejected",
      "rejected",
      "fulfilled",
      "fulfilled",
    ]);
  });

  it("does not acknowledge before the write has finished", async () => {
    let finishWrite = () => {};
    const batcher = new MicroBatcher<IdentifyEvent>(() => new Promise<void>((resolve) => (finishWrite = resolve)), {
      maxBatchSize: 1,
      maxWaitMs: 1,
    });
    let acknowledged = false;
    const pending = batcher.enqueue(event(1)).then(() => (acknowledged = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(acknowledged).toBe(false);
    finishWrite();
    await pending;
    expect(acknowledged).toBe(true);
  });

  it("drain writes what is pending and waits for writes in flight", async () => {
    const written: number[] = [];
    const batcher = new MicroBatcher<IdentifyEvent>(
      async (events) => {
        await new Promise((resolve) => setTimeout(resolve, 10));
        written.push(...events.map((e) => e.t));
      },
      { maxBatchSize: 100, maxWaitMs: 60_000 },
    );
    const pending = [batcher.enqueue(event(1)), batcher.enqueue(event(2))];
    await batcher.drain();
    expect(written).toEqual([1, 2]);
    await Promise.all(pending);
  });

  it("fails a write's callers at its deadline, then refuses new batches unsent until that write settles", async () => {
    const sent: number[][] = [];
    const hung: (() => void)[] = [];
    const batcher = new MicroBatcher<IdentifyEvent>(
      (events) => {
        sent.push(events.map((e) => e.t));
        return new Promise<void>((resolve) => hung.push(resolve));
      },
      { maxBatchSize: 1, maxWaitMs: 1, writeTimeoutMs: 50 },
    );
    // Writes in flight within the deadline are no reason to refuse.
    const first = batcher.enqueue(event(1));
    const second = batcher.enqueue(event(2));
    await expect(first).rejects.toBeInstanceOf(QueueWriteTimedOut);
    await expect(first).rejects.toThrow(/longer than 50 ms/);
    await expect(second).rejects.toThrow(/longer than 50 ms/);
    // Timers may fire a millisecond early: be surely past the deadline.
    await new Promise((resolve) => setTimeout(resolve, 5));
    // Past the deadline and still unsettled in Redis: refused without being sent.
    await expect(batcher.enqueue(event(3))).rejects.toBeInstanceOf(QueueWritesBackedUp);
    expect(sent).toEqual([[1], [2]]);
    for (const settle of hung) settle();
    await new Promise((resolve) => setTimeout(resolve, 0));
    const fourth = batcher.enqueue(event(4));
    expect(sent).toEqual([[1], [2], [4]]);
    hung[2]?.();
    await fourth;
  });

  describe("held through a failover", () => {
    class Failover extends Error {}
    const held = {
      maxBatchSize: 2,
      maxWaitMs: 60_000,
      holdMs: 60_000,
      retryable: (e: unknown) => e instanceof Failover,
    };

    it("tries a write that failed for a reason that passes again, as the same batch, until it lands", async () => {
      const tries: { ids: number[]; batchId: string }[] = [];
      const batcher = new MicroBatcher<IdentifyEvent>(async (events, batchId) => {
        tries.push({ ids: events.map((e) => e.t), batchId });
        if (tries.length < 3) throw new Failover("no primary yet");
      }, held);
      await Promise.all([batcher.enqueue(event(1)), batcher.enqueue(event(2))]);
      expect(tries.map((t) => t.ids)).toEqual([
        [1, 2],
        [1, 2],
        [1, 2],
      ]);
      expect(new Set(tries.map((t) => t.batchId)).size).toBe(1);
    });

    it("fails the batch's callers with the last error once the hold is over", async () => {
      let tries = 0;
      const batcher = new MicroBatcher<IdentifyEvent>(
        async () => {
          tries += 1;
          throw new Failover(`try ${tries}`);
        },
        { ...held, maxBatchSize: 1, holdMs: 120 },
      );
      const failed = batcher.enqueue(event(1));
      await expect(failed).rejects.toBeInstanceOf(Failover);
      expect(tries).toBeGreaterThan(1);
      await expect(failed).rejects.toThrow(`try ${tries}`);
    });

    it("does not try again a write that failed for another reason, nor one that timed out", async () => {
      let tries = 0;
      const failing = new MicroBatcher<IdentifyEvent>(
        async () => {
          tries += 1;
          throw new Error("bug");
        },
        { ...held, maxBatchSize: 1 },
      );
      await expect(failing.enqueue(event(1))).rejects.toThrow("bug");
      expect(tries).toBe(1);
      let hung = 0;
      const stalled = new MicroBatcher<IdentifyEvent>(
        () => {
          hung += 1;
          return new Promise<void>(() => {});
        },
        { ...held, maxBatchSize: 1, writeTimeoutMs: 20 },
      );
      await expect(stalled.enqueue(event(2))).rejects.toBeInstanceOf(QueueWriteTimedOut);
      expect(hung).toBe(1);
    });

    it("drain waits for a batch held between tries", async () => {
      let tries = 0;
      const batcher = new MicroBatcher<IdentifyEvent>(async () => {
        tries += 1;
        if (tries < 3) throw new Failover("no primary yet");
      }, held);
      const pending = batcher.enqueue(event(1));
      await batcher.drain();
      expect(tries).toBe(3);
      await pending;
    });
  });
});
