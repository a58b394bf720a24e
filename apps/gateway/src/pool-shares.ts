/**
 * How many of the pool's connections one project's requests may hold at once, so that the rest
 * stays for the other projects: one project's slow reads (ten pages over profiles of many ids)
 * otherwise held every connection, and another project's reads queued behind them. A request
 * past its project's share waits here for one of that project's to end, not in the pool's queue,
 * where it would be ahead of other projects' queries.
 */
export class PoolShares {
  private readonly held = new Map<number, number>();
  private readonly waiting = new Map<number, (() => void)[]>();

  constructor(private readonly perProject: number) {}

  /** `work`, once the project holds fewer than its share of the pool. */
  async run<T>(projectId: number, work: () => Promise<T>): Promise<T> {
    await this.take(projectId);
    try {
      return await work();
    } finally {
      this.release(projectId);
    }
  }

  /**
   * `work` with one of the project's connections given back while it runs, for a request held
   * in `run` that waits on something other than Postgres (a change feed reader waiting for a
   * change): taken again, in turn, when it ends.
   */
  async setAside<T>(projectId: number, work: () => Promise<T>): Promise<T> {
    this.release(projectId);
    try {
      return await work();
    } finally {
      await this.take(projectId);
    }
  }

  private async take(projectId: number): Promise<void> {
    const held = this.held.get(projectId) ?? 0;
    if (held < this.perProject) {
      this.held.set(projectId, held + 1);
      return;
    }
    const queue = this.waiting.get(projectId) ?? [];
    this.waiting.set(projectId, queue);
    await new Promise<void>((resolve) => queue.push(resolve));
  }

  private release(projectId: number): void {
    const queue = this.waiting.get(projectId);
    const next = queue?.shift();
    if (queue?.length === 0) this.waiting.delete(projectId);
    // The turn passes to the project's next request: what it holds stays the same.
    if (next !== undefined) return next();
    const held = (this.held.get(projectId) ?? 1) - 1;
    if (held === 0) this.held.delete(projectId);
    else this.held.set(projectId, held);
  }
}
