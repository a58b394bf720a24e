import { pruneDeadLetters, pruneHiddenProfiles, type Sql } from "@cm/db";
import type { Queue } from "bullmq";
import { applyEventRetention } from "./event-retention";

const DAY_MS = 86_400_000;
/** Jobs removed per call of BullMQ's clean, so that one call stays short. */
const CLEAN_BATCH = 1_000;

export interface RetentionPolicy {
  failedJobRetentionDays: number;
  deadLetterRetentionDays: number;
  hiddenProfileRetentionDays: number;
  eventRetentionDays: number;
}

export interface RetentionOutcome {
  failedJobs: number;
  deadLetters: number;
  hiddenProfiles: number;
  eventPartitionsMade: number;
  eventPartitionsDropped: number;
  eventKeys: number;
}

async function removeFailedJobs(queue: Queue, olderThanMs: number): Promise<number> {
  let removed = 0;
  for (;;) {
    const batch = await queue.clean(olderThanMs, CLEAN_BATCH, "failed");
    removed += batch.length;
    if (batch.length < CLEAN_BATCH) return removed;
  }
}

/** One run of the retention job: what the policy no longer keeps is removed. */
export async function applyRetention(
  sql: Sql,
  queues: Queue[],
  policy: RetentionPolicy,
  now = Date.now(),
): Promise<RetentionOutcome> {
  let failedJobs = 0;
  for (const queue of queues) failedJobs += await removeFailedJobs(queue, policy.failedJobRetentionDays * DAY_MS);
  const deadLetters = await pruneDeadLetters(sql, new Date(now - policy.deadLetterRetentionDays * DAY_MS));
  const hiddenProfiles = await pruneHiddenProfiles(sql, new Date(now - policy.hiddenProfileRetentionDays * DAY_MS));
  const events = await applyEventRetention(sql, policy.eventRetentionDays, now);
  return {
    failedJobs,
    deadLetters,
    hiddenProfiles,
    eventPartitionsMade: events.partitionsMade,
    eventPartitionsDropped: events.partitionsDropped,
    eventKeys: events.eventKeys,
  };
}
