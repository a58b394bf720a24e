import type { ProfileOperation } from "@cm/domain";
import type { Queue } from "bullmq";
import type { IdentifyJobData } from "./payloads";

/**
 * Removes the operations `erased` picks from the failed identify jobs, which are kept in Redis
 * (removeOnFail: false) until retention removes them; a job left with none is removed. Job by
 * job, oldest first: failed jobs are few, and an erasure is rare.
 */
export async function removeFromFailedIdentifyJobs(
  queue: Queue<IdentifyJobData>,
  erased: (operation: ProfileOperation) => boolean,
): Promise<void> {
  for (const id of await queue.getRanges(["failed"], 0, -1, true)) {
    const job = await queue.getJob(id);
    // Gone meanwhile (retried, or removed), or not a job a gateway queued.
    if (job === undefined || !Array.isArray(job.data.events)) continue;
    const kept = job.data.events.filter((operation) => !erased(operation));
    if (kept.length === job.data.events.length) continue;
    if (kept.length === 0) await job.remove();
    else await job.updateData({ ...job.data, events: kept });
  }
}
