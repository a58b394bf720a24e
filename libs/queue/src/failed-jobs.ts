import type { Job, Queue } from "bullmq";

/** Picks items of a batch queue's failed jobs (the job says when and why it failed). */
export type FailedItemPick<Data extends { events: unknown[] }> = (
  item: Data["events"][number],
  job: Job<Data>,
) => boolean;

/** The failed jobs of a batch queue that a gateway queued (jobs hold their items in `events`), oldest first. */
async function* failedJobs<Data extends { events: unknown[] }>(queue: Queue<Data>): AsyncGenerator<Job<Data>> {
  for (const id of await queue.getRanges(["failed"], 0, -1, true)) {
    const job = (await queue.getJob(id)) as Job<Data> | undefined;
    // Gone meanwhile (retried, or removed), or not a job a gateway queued.
    if (job !== undefined && Array.isArray(job.data.events)) yield job;
  }
}

/** The items `picked` selects from a batch queue's failed jobs, which are kept in Redis (removeOnFail: false). */
export async function findInFailedJobs<Data extends { events: unknown[] }>(
  queue: Queue<Data>,
  picked: FailedItemPick<Data>,
): Promise<Data["events"]> {
  const items: Data["events"] = [];
  for await (const job of failedJobs(queue)) items.push(...job.data.events.filter((item) => picked(item, job)));
  return items;
}

/**
 * Removes the items `picked` selects from a batch queue's failed jobs, which are kept until an
 * operator replays or discards them; a job left with none is removed. Job by job, oldest first:
 * failed jobs are few (a job is retried until applied), and an erasure is rare.
 */
export async function removeFromFailedJobs<Data extends { events: unknown[] }>(
  queue: Queue<Data>,
  picked: FailedItemPick<Data>,
): Promise<number> {
  let removed = 0;
  for await (const job of failedJobs(queue)) {
    const kept = job.data.events.filter((item) => !picked(item, job));
    if (kept.length === job.data.events.length) continue;
    removed += job.data.events.length - kept.length;
    if (kept.length === 0) await job.remove();
    else await job.updateData({ ...job.data, events: kept } as Data);
  }
  return removed;
}
