import type { DeliveryShares } from "@cm/domain";

/** The share that was full when a slot was refused. */
export type FullShare = "project" | "paced";

/**
 * A worker's delivery slots as its projects and its paced endpoints hold them (docs/webhooks.md,
 * "What a bad endpoint costs"): a delivery takes a slot before its first POST and gives it back
 * once done; one whose project, or the paced endpoints when it is paced, already holds its share
 * is refused at once, and waits for the next poll without holding any. Per worker process: each
 * worker keeps its own shares.
 */
export class DeliverySlots {
  private readonly byProject = new Map<number, number>();
  private paced = 0;

  constructor(private readonly shares: DeliveryShares) {}

  /** A slot for a delivery to an endpoint of `projectId`, to release once done; or the share that is full. */
  take(projectId: number, paced: boolean): { release(): void } | { full: FullShare } {
    const held = this.byProject.get(projectId) ?? 0;
    if (held >= this.shares.project) return { full: "project" };
    if (paced && this.paced >= this.shares.paced) return { full: "paced" };
    this.byProject.set(projectId, held + 1);
    if (paced) this.paced += 1;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        const left = (this.byProject.get(projectId) ?? 1) - 1;
        if (left === 0) this.byProject.delete(projectId);
        else this.byProject.set(projectId, left);
        if (paced) this.paced -= 1;
      },
    };
  }
}
