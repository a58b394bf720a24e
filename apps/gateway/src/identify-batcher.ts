import type { IdentifyEvent } from "@cm/domain";

export interface IdentifyBatcherOptions {
  /** A batch is written as soon as it holds this many events... */
  maxBatchSize: number;
  /**
   * ...or as many bytes of request bodies as this (it never holds more, unless one body alone
   * does): a few large bodies fill a batch, so that a job, and the memory of the gateway that
   * writes it and the worker that applies it, stays bounded...
   */
  maxBatchBytes: number;
  /** ...or this long after its first event arrived, whichever comes first. */
  maxWaitMs: number;
}

interface Pending {
  event: IdentifyEvent;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Groups identifies accepted at about the same time into one queue write. Each caller's
 * promise settles with the write that holds its event: success only once that write has
 * succeeded, failure for exactly the events of a failed write.
 */
export class IdentifyBatcher {
  private pending: Pending[] = [];
  private pendingBytes = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly writes = new Set<Promise<void>>();

  constructor(
    private readonly write: (events: IdentifyEvent[]) => Promise<void>,
    private readonly options: IdentifyBatcherOptions = { maxBatchSize: 500, maxBatchBytes: 1024 * 1024, maxWaitMs: 2 },
    private readonly onBatch: (size: number) => void = () => {},
  ) {}

  /** `bytes`: the size of the request body the event came in. */
  enqueue(event: IdentifyEvent, bytes = 0): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.pending.length > 0 && this.pendingBytes + bytes > this.options.maxBatchBytes) this.flush();
      this.pending.push({ event, resolve, reject });
      this.pendingBytes += bytes;
      if (this.pending.length >= this.options.maxBatchSize || this.pendingBytes >= this.options.maxBatchBytes) this.flush();
      else if (this.timer === null) this.timer = setTimeout(() => this.flush(), this.options.maxWaitMs);
    });
  }

  /** Writes what is pending now and waits for every write in flight. */
  async drain(): Promise<void> {
    this.flush();
    await Promise.allSettled([...this.writes]);
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
    this.onBatch(batch.length);
    const written = this.write(batch.map((p) => p.event)).then(
      () => batch.forEach((p) => p.resolve()),
      (error: unknown) => batch.forEach((p) => p.reject(error)),
    );
    this.writes.add(written);
    void written.finally(() => this.writes.delete(written));
  }
}
