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
   * A write that takes longer fails its callers (it may still land: they were not told 200).
   * While a write stays unsettled past it, Redis is not answering (stalled): new batches are
   * refused without being sent, so that the writes that may land after their callers were
   * told they failed stay few.
   */
  writeTimeoutMs: number;
}

/** A batch refused without being written, because an earlier write has not settled in time. */
export class QueueWritesBackedUp extends Error {
  readonly kind = "queue_backed_up";
}

function withDeadline(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`queue write took longer than ${ms} ms`)), ms);
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
};

/**
 * Groups items of one job kind (profile operations, tracked events) accepted at about the same
 * time into one queue write. Each caller's promise settles with the write that holds its item:
 * success only once that write has succeeded, failure for exactly the items of a failed (or
 * timed out, or refused) write.
 */
export class MicroBatcher<Item> {
  private readonly options: MicroBatcherOptions;
  private pending: Pending<Item>[] = [];
  private pendingBytes = 0;
  private timer: NodeJS.Timeout | null = null;
  /** Writes Redis has not settled yet, with when each was sent (in that order). */
  private readonly writes = new Map<Promise<void>, number>();

  constructor(
    private readonly write: (items: Item[]) => Promise<void>,
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

  /** Writes what is pending now and waits for every write in flight. */
  async drain(): Promise<void> {
    this.flush();
    await Promise.allSettled([...this.writes.keys()]);
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
    const oldest = this.writes.values().next().value;
    if (oldest !== undefined && Date.now() - oldest >= this.options.writeTimeoutMs) {
      const refused = new QueueWritesBackedUp(`a queue write has not settled for ${Date.now() - oldest} ms`);
      batch.forEach((p) => p.reject(refused));
      return;
    }
    this.onBatch(batch.length);
    const written = this.write(batch.map((p) => p.item));
    // The write stays tracked until Redis settles it, even after its callers gave up on it.
    this.writes.set(written, Date.now());
    written.then(
      () => this.writes.delete(written),
      () => this.writes.delete(written),
    );
    withDeadline(written, this.options.writeTimeoutMs).then(
      () => batch.forEach((p) => p.resolve()),
      (error: unknown) => batch.forEach((p) => p.reject(error)),
    );
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
