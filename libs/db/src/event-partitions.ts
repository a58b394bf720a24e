import { EVENT_PARTITIONS_LOCK, takeAdvisoryLock } from "./advisory-locks";
import type { Sql } from "./connect";

const DAY_MS = 86_400_000;

/** The UTC day a time falls in, as the ms of its midnight. */
export const dayOf = (ms: number): number => Math.floor(ms / DAY_MS) * DAY_MS;

/** events_p20261123: the partition of that UTC day (migration 013). */
export function eventPartitionName(day: number): string {
  return `events_p${new Date(day).toISOString().slice(0, 10).replaceAll("-", "")}`;
}

function dayOfPartition(name: string): number | null {
  const match = /^events_p(\d{4})(\d{2})(\d{2})$/.exec(name);
  return match === null ? null : Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]));
}

/** The days that have a partition of their own, oldest first. */
export async function eventPartitionDays(sql: Sql): Promise<number[]> {
  const rows = await sql<{ name: string }[]>`
    SELECT c.relname AS name FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'events'::regclass`;
  return rows
    .map((row) => dayOfPartition(row.name))
    .filter((day): day is number => day !== null)
    .sort((a, b) => a - b);
}

/**
 * Makes the partitions of the days from `from` to `to` (ms, both included) that are missing,
 * each in a transaction of its own: the day's rows that fell into events_default meanwhile are
 * moved into it, since Postgres refuses to attach a partition whose rows the default holds.
 */
export async function ensureEventPartitions(sql: Sql, from: number, to: number): Promise<string[]> {
  const made: string[] = [];
  for (let day = dayOf(from); day <= to; day += DAY_MS) {
    const name = eventPartitionName(day);
    const start = new Date(day);
    const end = new Date(day + DAY_MS);
    const createdNow = await sql.begin(async (tx) => {
      await takeAdvisoryLock(tx, EVENT_PARTITIONS_LOCK);
      const [exists] = await tx`SELECT 1 FROM pg_class WHERE relname = ${name} AND relkind = 'r'`;
      if (exists !== undefined) return false;
      await tx`CREATE TABLE ${tx(name)} (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`;
      await tx`
        WITH moved AS (
          DELETE FROM events_default WHERE created_at >= ${start} AND created_at < ${end} RETURNING *
        )
        INSERT INTO ${tx(name)} SELECT * FROM moved`;
      // Bounds are literals in DDL, never parameters; both are ours (an ISO date and eventPartitionName).
      await tx.unsafe(
        `ALTER TABLE events ATTACH PARTITION ${name} FOR VALUES FROM ('${start.toISOString()}') TO ('${end.toISOString()}')`,
      );
      return true;
    });
    if (createdNow) made.push(name);
  }
  return made;
}

/**
 * Retention: every day's partition that ends at or before `before` is detached and dropped
 * whole; rows of the default partition older than it are deleted (a backfill older than every
 * partition, few by nature).
 */
export async function dropEventPartitionsBefore(
  sql: Sql,
  before: number,
): Promise<{ dropped: string[]; rows: number }> {
  const dropped: string[] = [];
  for (const day of await eventPartitionDays(sql)) {
    if (day + DAY_MS > before) break;
    const name = eventPartitionName(day);
    await sql.begin(async (tx) => {
      await takeAdvisoryLock(tx, EVENT_PARTITIONS_LOCK);
      await tx`ALTER TABLE events DETACH PARTITION ${tx(name)}`;
      await tx`DROP TABLE ${tx(name)}`;
    });
    dropped.push(name);
  }
  const rows = await sql`DELETE FROM events_default WHERE created_at < ${new Date(before)} RETURNING 1`;
  return { dropped, rows: rows.length };
}

/** Keys removed per statement: one short transaction each. */
const KEY_CHUNK = 10_000;

/**
 * Removes the deduplication keys that expired before `before` (ms). Keys are kept a while past
 * their window (the caller's margin) so that a job retried late still finds them.
 */
export async function pruneEventKeys(sql: Sql, before: number): Promise<number> {
  let removed = 0;
  for (;;) {
    // By primary key, not ctid: Citus cannot plan a DELETE by ctid of a distributed table.
    const rows = await sql`
      DELETE FROM event_keys AS k
       USING (SELECT project_id, key FROM event_keys WHERE expires_at < ${before} LIMIT ${KEY_CHUNK}) AS expired
       WHERE k.project_id = expired.project_id AND k.key = expired.key
      RETURNING 1`;
    removed += rows.length;
    if (rows.length < KEY_CHUNK) return removed;
  }
}
