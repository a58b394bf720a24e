/**
 * The change feed's waiting readers (GET /api/v2/changes?wait=S, docs/changes.md "Long-poll"),
 * woken by project when the gateway's LISTEN connection hears of a change (listenForChanges).
 * At most `max` wait at once in a gateway: each holds a socket and a timer, and past the bound a
 * reader is answered at once with what there is, as if its wait had ended.
 */
export class ChangeWaits {
  private readonly waiting = new Map<number, Set<() => void>>();
  private count = 0;
  private closed = false;

  constructor(
    private readonly max: number,
    /** The longest wait a reader gets, whatever it asked (under the gateway's stall timeout). */
    readonly maxWaitMs: number,
  ) {}

  wait(projectId: number, ms: number): Promise<boolean> {
    if (this.closed || this.count >= this.max) return Promise.resolve(false);
    return new Promise((resolve) => {
      const readers = this.waiting.get(projectId) ?? new Set();
      this.waiting.set(projectId, readers);
      this.count += 1;
      const wake = () => {
        clearTimeout(timer);
        readers.delete(wake);
        if (readers.size === 0 && this.waiting.get(projectId) === readers) this.waiting.delete(projectId);
        this.count -= 1;
        resolve(true);
      };
      const timer = setTimeout(wake, ms);
      readers.add(wake);
    });
  }

  /** A change of the project committed: its readers read again. */
  notify(projectId: number): void {
    for (const wake of [...(this.waiting.get(projectId) ?? [])]) wake();
  }

  /** Shutdown: every reader is answered now, and none waits from here on. */
  close(): void {
    this.closed = true;
    for (const readers of [...this.waiting.values()]) for (const wake of [...readers]) wake();
  }
}
