import type { IdentifyEvent } from "@cm/domain";

export interface IdentifyBatcherOptions {
  /** A batch is written as soon as it holds this many events... */
  maxBatchSize: number;
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
  private timer: NodeJS.Timeout | null = null;
  private readonly writes = new Set<Promise<void>>();

  constructor(
    private readonly write: (events: IdentifyEvent[]) => Promise<void>,
    private readonly options: IdentifyBatcherOptions = { maxBatchSize: 500, maxWaitMs: 2 },
    private readonly onBatch: (size: number) => void = () => {},
  ) {}

  enqueue(event: IdentifyEvent): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ event, resolve, reject });
      if (this.pending.length >= this.options.maxBatchSize) this.flush();
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
    this.onBatch(batch.length);
    const written = this.write(batch.map((p) => p.event)).then(
      () => batch.forEach((p) => p.resolve()),
      (error: unknown) => batch.forEach((p) => p.reject(error)),
    );
    this.writes.add(written);
    void written.finally(() => this.writes.delete(written));
  }
}
