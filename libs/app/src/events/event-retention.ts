import { dayOf, dropEventPartitionsBefore, ensureEventPartitions, pruneEventKeys, type Sql } from "@cm/db";

const DAY_MS = 86_400_000;
/** Days whose partitions exist ahead of today: a week of maintenance runs may fail before events reach the default. */
const PARTITION_DAYS_AHEAD = 7;
/**
 * Deduplication keys outlive their window by this much: a job retried late (50 attempts, backoff
 * capped at a minute) still finds the keys of the events it stored on its first attempt.
 */
const EVENT_KEY_GRACE_MS = DAY_MS;

/** The partitions of yesterday, today and the days ahead. */
export function ensureUpcomingEventPartitions(sql: Sql, now = Date.now()): Promise<string[]> {
  return ensureEventPartitions(sql, dayOf(now) - DAY_MS, dayOf(now) + PARTITION_DAYS_AHEAD * DAY_MS);
}

export interface EventRetentionOutcome {
  partitionsMade: number;
  partitionsDropped: number;
  eventKeys: number;
}

/** Part of the retention job: partitions made ahead, those past the retention dropped, expired keys removed. */
export async function applyEventRetention(
  sql: Sql,
  retentionDays: number,
  now = Date.now(),
): Promise<EventRetentionOutcome> {
  const made = await ensureUpcomingEventPartitions(sql, now);
  const { dropped } = await dropEventPartitionsBefore(sql, dayOf(now) - retentionDays * DAY_MS);
  const eventKeys = await pruneEventKeys(sql, now - EVENT_KEY_GRACE_MS);
  return { partitionsMade: made.length, partitionsDropped: dropped.length, eventKeys };
}
