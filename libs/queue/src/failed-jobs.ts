import type { Job, Queue } from "bullmq";
import { batchItems, withBatchItems, type BatchItem, type BatchJobData } from "./payloads";

/** Picks items of a batch queue's failed jobs (the job says when and why it failed). */
export type FailedItemPick<Data extends BatchJobData> = (item: BatchItem<Data>, job: Job<Data>) => boolean;

/** The failed jobs of a batch queue that a gateway queued, with their items (of any version), oldest first. */
async function* failedJobs<Data extends BatchJobData>(
  queue: Queue<Data>,
): AsyncGenerator<{ job: Job<Data>; items: BatchItem<Data>[] }> {
  for (const id of await queue.getRanges(["failed"], 0, -1, true)) {
    const job = (await queue.getJob(id)) as Job<Data> | undefined;
    const items = job === undefined ? undefined : (batchItems(job.data) as BatchItem<Data>[] | undefined);
    // Gone meanwhile (retried, or removed), or not a job a gateway queued.
    if (job !== undefined && items !== undefined) yield { job, items };
  }
}

/** The items `picked` selects from a batch queue's failed jobs, which are kept in Redis (removeOnFail: false). */
export async function findInFailedJobs<Data extends BatchJobData>(
  queue: Queue<Data>,
  picked: FailedItemPick<Data>,
): Promise<BatchItem<Data>[]> {
  const found: BatchItem<Data>[] = [];
  for await (const { job, items } of failedJobs(queue)) found.push(...items.filter((item) => picked(item, job)));
  return found;
}

/**
 * Removes the items `picked` selects from a batch queue's failed jobs, which are kept until an
 * operator replays or discards them; a job left with none is removed. Job by job, oldest first:
 * failed jobs are few (a job is retried until applied), and an erasure is rare.
 */
export async function removeFromFailedJobs<Data extends BatchJobData>(
  queue: Queue<Data>,
  picked: FailedItemPick<Data>,
): Promise<number> {
  let removed = 0;
  for await (const { job, items } of failedJobs(queue)) {
    const kept = items.filter((item) => !picked(item, job));
    if (kept.length === items.length) continue;
    removed += items.length - kept.length;
    if (kept.length === 0) await job.remove();
    else await job.updateData(withBatchItems(job.data, kept));
  }
  return removed;
}
