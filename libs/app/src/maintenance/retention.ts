import { deadLettersBefore, pruneHiddenProfiles, trimChanges, type Sql } from "@cm/db";
import type { Queue } from "bullmq";
import { applyEventRetention } from "../events/event-retention";

const DAY_MS = 86_400_000;
export interface RetentionPolicy {
  failedJobWarnDays: number;
  deadLetterWarnDays: number;
  hiddenProfileRetentionDays: number;
  eventRetentionDays: number;
  changeRetentionDays: number;
}

export interface RetentionOutcome {
  /** Failed jobs and dead letters older than the policy's warning ages, never removed here. */
  agedFailedJobs: number;
  agedDeadLetters: number;
  hiddenProfiles: number;
  eventPartitionsMade: number;
  eventPartitionsDropped: number;
  eventKeys: number;
  /** Change feed changes removed (docs/changes.md, "Retention"). */
  changes: number;
}

/** How many of the queue's failed jobs failed before `before`: failed jobs are few (an outage or a bug retries). */
async function failedJobsBefore(queue: Queue, before: number): Promise<number> {
  const failed = await queue.getJobs(["failed"]);
  return failed.filter((job) => (job.finishedOn ?? job.timestamp) < before).length;
}

/**
 * One run of the retention job: what the policy no longer keeps is removed. Failed jobs and
 * dead letters hold acknowledged operations: they stay until an operator replays or discards
 * them (docs/reliability.md); those past the policy's ages are counted, for the job to warn.
 */
export async function applyRetention(
  sql: Sql,
  queues: Queue[],
  policy: RetentionPolicy,
  now = Date.now(),
): Promise<RetentionOutcome> {
  let agedFailedJobs = 0;
  for (const queue of queues) agedFailedJobs += await failedJobsBefore(queue, now - policy.failedJobWarnDays * DAY_MS);
  const agedDeadLetters = await deadLettersBefore(sql, new Date(now - policy.deadLetterWarnDays * DAY_MS));
  const hiddenProfiles = await pruneHiddenProfiles(sql, new Date(now - policy.hiddenProfileRetentionDays * DAY_MS));
  const events = await applyEventRetention(sql, policy.eventRetentionDays, now);
  const changes = await trimChanges(sql, new Date(now - policy.changeRetentionDays * DAY_MS));
  return {
    agedFailedJobs,
    agedDeadLetters,
    hiddenProfiles,
    eventPartitionsMade: events.partitionsMade,
    eventPartitionsDropped: events.partitionsDropped,
    eventKeys: events.eventKeys,
    changes,
  };
}
