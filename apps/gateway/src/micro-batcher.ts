import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";

export interface MicroBatcherOptions {
  /** A batch is written as soon as it holds this many items... */
  maxBatchSize: number;
  /**
   * ...or as many bytes of request bodies as this (it never holds more, unless one body alone
   * does): a few large bodies fill a batch, so that a job, and the memory of the gateway that
   * writes it and the worker that applies it, stays bounded...
   */
  maxBatchBytes: number;
  /** ...or this long after its first item arrived, whichever comes first. */
  maxWaitMs: number;
  /**
   * A try of a write that takes longer fails its callers (it may still land: they were not told
   * 200). While a try stays unsettled past it, Redis is not answering (stalled): new batches
   * are refused without being sent, so that the writes that may land after their callers were
   * told they failed stay few.
   */
  writeTimeoutMs: number;
  /**
   * A try that fails for a reason that passes (`retryable`: Redis away, or changing primaries) is
   * tried again, as the same batch, until one succeeds or this long has passed since the first:
   * a failover that ends within it costs the batch's callers latency, not an error.
   */
  holdMs: number;
  retryable: (error: unknown) => boolean;
}

/** A batch refused without being written, because an earlier write has not settled in time. */
export class QueueWritesBackedUp extends Error {
  readonly kind = "queue_backed_up";
}

/** A try of a write that Redis did not answer within writeTimeoutMs: it may still land. */
export class QueueWriteTimedOut extends Error {
  readonly kind = "queue_write_timed_out";
}

/** Pauses between the tries of a held write: short, since a promoted primary takes writes at once. */
const FIRST_RETRY_MS = 50;
const LAST_RETRY_MS = 250;

function withDeadline(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new QueueWriteTimedOut(`queue write took longer than ${ms} ms`)), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

interface Pending<Item> {
  item: Item;
  resolve: () => void;
  reject: (error: unknown) => void;
}

const DEFAULTS: MicroBatcherOptions = {
  maxBatchSize: 500,
  maxBatchBytes: 1024 * 1024,
  maxWaitMs: 2,
  writeTimeoutMs: 2_000,
  holdMs: 0,
  retryable: () => false,
};

/**
 * Groups items of one job kind (profile operations, tracked events) accepted at about the same
 * time into one queue write. Each caller's promise settles with the write that holds its item:
 * success only once that write has succeeded, failure for exactly the items of a failed (or
 * timed out, or refused) write. A write held through a failover may land after a later batch's:
 * the workers apply a user's operations by their stamps, whatever their jobs' order.
 */
export class MicroBatcher<Item> {
  private readonly options: MicroBatcherOptions;
  private pending: Pending<Item>[] = [];
  private pendingBytes = 0;
  private timer: NodeJS.Timeout | null = null;
  /** Tries Redis has not settled yet, with when each was sent (in that order). */
  private readonly writes = new Map<Promise<void>, number>();
  /** Batches not yet settled for their callers, those held between tries included. */
  private readonly batches = new Set<Promise<void>>();

  /**
   * `write` queues a batch; `batchId` is the same for every try of one batch, so that a try that
   * landed before its connection failed is not queued again by the next (the job's id).
   */
  constructor(
    private readonly write: (items: Item[], batchId: string) => Promise<void>,
    options: Partial<MicroBatcherOptions> = {},
    private readonly onBatch: (size: number) => void = () => {},
  ) {
    this.options = { ...DEFAULTS, ...options };
  }

  /** `bytes`: the size of the request body the item came in. */
  enqueue(item: Item, bytes = 0): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.pending.length > 0 && this.pendingBytes + bytes > this.options.maxBatchBytes) this.flush();
      this.pending.push({ item, resolve, reject });
      this.pendingBytes += bytes;
      if (this.pending.length >= this.options.maxBatchSize || this.pendingBytes >= this.options.maxBatchBytes)
        this.flush();
      else if (this.timer === null) this.timer = setTimeout(() => this.flush(), this.options.maxWaitMs);
    });
  }

  /** Writes what is pending now and waits for every write in flight, and every batch held. */
  async drain(): Promise<void> {
    this.flush();
    await Promise.allSettled([...this.batches, ...this.writes.keys()]);
  }

  private flush(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    this.pendingBytes = 0;
    const refused = this.backedUp();
    if (refused !== null) {
      batch.forEach((p) => p.reject(refused));
      return;
    }
    this.onBatch(batch.length);
    const written = this.writeHeld(
      batch.map((p) => p.item),
      randomUUID(),
    );
    this.batches.add(written);
    written
      .then(
        () => batch.forEach((p) => p.resolve()),
        (error: unknown) => batch.forEach((p) => p.reject(error)),
      )
      .finally(() => this.batches.delete(written));
  }

  /** Why a batch must not be sent now: a try unsettled past the deadline (Redis stalled). */
  private backedUp(): QueueWritesBackedUp | null {
    const oldest = this.writes.values().next().value;
    if (oldest === undefined || Date.now() - oldest < this.options.writeTimeoutMs) return null;
    return new QueueWritesBackedUp(`a queue write has not settled for ${Date.now() - oldest} ms`);
  }

  /** Tries the batch until a try succeeds, fails for a reason that does not pass, or the hold is over. */
  private async writeHeld(items: Item[], batchId: string): Promise<void> {
    const holdUntil = Date.now() + this.options.holdMs;
    for (let pause = FIRST_RETRY_MS; ; pause = Math.min(2 * pause, LAST_RETRY_MS)) {
      try {
        return await this.tryWrite(items, batchId);
      } catch (error) {
        if (!this.options.retryable(error) || Date.now() + pause > holdUntil) throw error;
      }
      await sleep(pause);
      const refused = this.backedUp();
      if (refused !== null) throw refused;
    }
  }

  /** One try, failed at the deadline, and tracked until Redis settles it, even after its callers gave up on it. */
  private tryWrite(items: Item[], batchId: string): Promise<void> {
    const written = this.write(items, batchId);
    this.writes.set(written, Date.now());
    written.then(
      () => this.writes.delete(written),
      () => this.writes.delete(written),
    );
    return withDeadline(written, this.options.writeTimeoutMs);
  }
}

/** What queues the items of one job kind: a micro-batcher, or one a queue shard. */
export interface Batcher<Item> {
  enqueue(item: Item, bytes?: number): Promise<void>;
  /** Writes what is pending and waits for every write in flight. */
  drain(): Promise<void>;
}

/**
 * A micro-batcher for each shard of a job kind's queue (INTAKE_QUEUE_SHARDS): an item goes to its
 * user's (`shardOf`), so that a user's items are written to one queue in the order they were
 * accepted, and each shard's batches fill, are written and time out on their own (a Redis Cluster
 * node that stalls holds back its shard's writes only).
 */
export class ShardedBatcher<Item> implements Batcher<Item> {
  constructor(
    private readonly shards: readonly MicroBatcher<Item>[],
    private readonly shardOf: (item: Item, shards: number) => number,
  ) {}

  enqueue(item: Item, bytes = 0): Promise<void> {
    return this.shards[this.shardOf(item, this.shards.length)]!.enqueue(item, bytes);
  }

  async drain(): Promise<void> {
    await Promise.all(this.shards.map((shard) => shard.drain()));
  }
}
