import type { Queue } from "bullmq";

/**
 * Removes the items `erased` picks from a batch queue's failed jobs, which are kept in Redis
 * (removeOnFail: false) until retention removes them; a job left with none is removed. Job by
 * job, oldest first: failed jobs are few, and an erasure is rare.
 */
export async function removeFromFailedJobs<Data extends { events: unknown[] }>(
  queue: Queue<Data>,
  erased: (item: Data["events"][number]) => boolean,
): Promise<void> {
  for (const id of await queue.getRanges(["failed"], 0, -1, true)) {
    const job = await queue.getJob(id);
    // Gone meanwhile (retried, or removed), or not a job a gateway queued.
    if (job === undefined || !Array.isArray(job.data.events)) continue;
    const kept = job.data.events.filter((item) => !erased(item));
    if (kept.length === job.data.events.length) continue;
    if (kept.length === 0) await job.remove();
    else await job.updateData({ ...job.data, events: kept } as Data);
  }
}
