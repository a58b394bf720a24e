import { laterPosition, type ChangePosition, type ChangeType } from "@cm/domain";
import type { Db, Sql } from "./connect";

/** A change as the feed serves it (migration 022, docs/changes.md). */
export interface StoredChange {
  position: ChangePosition;
  type: ChangeType;
  userId: string | null;
  appliedAt: Date;
  change: Record<string, unknown>;
}

export interface ChangesRead {
  changes: StoredChange[];
  /** Where to read on: past every change this read went through, served or not. */
  next: ChangePosition;
  /** Whether it went through every change readable now: nothing follows `next` until more is applied. */
  caughtUp: boolean;
  /** Retention removed every change of the project up to here (change_trims); null when it never removed one. */
  trimmedThrough: ChangePosition | null;
}

interface ChangesReadRow {
  changes: (Omit<StoredChange, "appliedAt"> & { appliedAt: string })[] | null;
  matched: number;
  scanned: number;
  last_matched: ChangePosition | null;
  last_scanned: ChangePosition | null;
  horizon: string;
  trimmed: ChangePosition | null;
}

/**
 * Changes a read with a `types` filter goes through at most: a type that is rare costs a read no
 * more than this, and the reader's next cursor moves past them all the same.
 */
const FILTERED_SCAN_ROWS = 10_000;

/**
 * The project's changes after `after` (from its first when null), at most `limit`, in position
 * order, of `types` only when given; and, read in the same snapshot, how far retention trimmed
 * the project's changes (a cursor before it has lost changes: the caller refuses it).
 *
 * Only changes of transactions older than every transaction still running are read (below the
 * horizon, pg_snapshot_xmin): a change that is not visible yet belongs to a transaction that is
 * still running or starts later, whose position is at least that horizon (profiles.change_xid
 * never moves a change before its own transaction), so it comes after everything read here, and
 * a reader resuming from `next` misses nothing (docs/changes.md, "Why nothing is skipped"). So
 * when the read went through every change below the horizon, `next` is the horizon itself: a
 * reader filtering a rare type does not go through the same changes again.
 *
 * An event's change is rendered from its event's row, so that the erasure of the event takes it
 * out of the feed, and so does its profile's erasure stamped at or after it, from the commit of
 * that erasure on, before the job erases the event itself (docs/changes.md, "Erasure"); the
 * user's id is its profile's.
 */
export async function readChanges(
  sql: Db,
  projectId: number,
  after: ChangePosition | null,
  limit: number,
  types: readonly ChangeType[] | null,
): Promise<ChangesRead> {
  const from = after ?? { xid: "0", seq: "0" };
  const scan = types === null ? limit : Math.max(limit, FILTERED_SCAN_ROWS);
  const [row] = await sql<ChangesReadRow[]>`
    WITH scanned AS (
      SELECT c.* FROM changes AS c
       WHERE c.project_id = ${projectId}
         AND (c.pos_xid, c.seq) > (${from.xid}::xid8, ${from.seq}::bigint)
         AND c.pos_xid < pg_snapshot_xmin(pg_current_snapshot())
       ORDER BY c.pos_xid, c.seq
       LIMIT ${scan}
    ), page AS (
      SELECT * FROM scanned
       ${types === null ? sql`` : sql`WHERE type = ANY(${types as string[]}::text[])`}
       ORDER BY pos_xid, seq
       LIMIT ${limit}
    ), rendered AS (
      SELECT p.pos_xid, p.seq,
             json_build_object('position', json_build_object('xid', p.pos_xid::text, 'seq', p.seq::text),
                               'type', p.type,
                               'userId', coalesce(p.user_id, u.external_id),
                               'appliedAt', p.applied_at,
                               'change', CASE WHEN p.type = 'event.stored'
                                              THEN json_build_object('id', e.id, 'event_name', e.name, 'data', e.data,
                                                                     'source', e.source, 'created_at', e.created_at,
                                                                     'received_at', e.received_at)
                                              ELSE p.change::json END) AS change,
             p.type <> 'event.stored'
               OR (e.id IS NOT NULL
                   AND (u.deleted_t IS NULL OR e.created_at > timestamptz 'epoch' + u.deleted_t * interval '1 millisecond'))
               AS served
        FROM page AS p
        LEFT JOIN events AS e
          ON p.type = 'event.stored' AND e.project_id = p.project_id AND e.user_key = p.user_key
         AND e.created_at = p.event_at AND e.id = p.event_id
        LEFT JOIN profiles AS u ON p.type = 'event.stored' AND u.project_id = p.project_id AND u.key = p.user_key
    )
    SELECT (SELECT json_agg(change ORDER BY pos_xid, seq) FILTER (WHERE served) FROM rendered) AS changes,
           (SELECT count(*)::integer FROM page) AS matched,
           (SELECT count(*)::integer FROM scanned) AS scanned,
           (SELECT json_build_object('xid', pos_xid::text, 'seq', seq::text) FROM page
             ORDER BY pos_xid DESC, seq DESC LIMIT 1) AS last_matched,
           (SELECT json_build_object('xid', pos_xid::text, 'seq', seq::text) FROM scanned
             ORDER BY pos_xid DESC, seq DESC LIMIT 1) AS last_scanned,
           pg_snapshot_xmin(pg_current_snapshot())::text AS horizon,
           (SELECT json_build_object('xid', pos_xid::text, 'seq', seq::text) FROM change_trims
             WHERE project_id = ${projectId}) AS trimmed`;
  const read = row as ChangesReadRow;
  const changes = (read.changes ?? []).map((change) => ({ ...change, appliedAt: new Date(change.appliedAt) }));
  const trimmedThrough = read.trimmed;
  // A full page: what follows its last change is still to read.
  if (read.matched === limit && read.last_matched !== null) {
    return { changes, next: read.last_matched, caughtUp: false, trimmedThrough };
  }
  // A filter's scan cut short: what follows the last change it went through is still to read.
  if (read.scanned === scan && read.last_scanned !== null) {
    return { changes, next: read.last_scanned, caughtUp: false, trimmedThrough };
  }
  // Every change below the horizon was gone through: any other has a position at or past it.
  return { changes, next: laterPosition(from, horizonPosition(read.horizon)), caughtUp: true, trimmedThrough };
}

/**
 * The position of the read horizon `xid`: every change not read yet when the horizon was taken
 * has a position at or past it (the horizon's xid, and a seq of at least 1).
 */
function horizonPosition(xid: string): ChangePosition {
  return { xid, seq: "0" };
}

/**
 * Where a new endpoint's cursor starts: the feed's read horizon now, as readChanges gives it to a
 * reader that is caught up. The endpoint gets every change committed from now on (and those of the
 * transactions still running), none before.
 */
export async function changeFeedNow(sql: Db): Promise<ChangePosition> {
  const [row] = await sql<{ horizon: string }[]>`SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS horizon`;
  return horizonPosition((row as { horizon: string }).horizon);
}

/**
 * Calls `onChange` with the project of each change as it commits: the capture's triggers notify
 * the channel `changes` with the project's id (libs/db/functions/change_feed.sql). One connection
 * of its own, kept apart from the pool's, listening again after a reconnect, closed by `sql.end`.
 * A notice says a change committed, not that it is readable yet (the read horizon may still be
 * behind it), so a reader woken reads again until it is.
 */
export async function listenForChanges(sql: Sql, onChange: (projectId: number) => void): Promise<void> {
  await sql.listen("changes", (payload) => {
    const projectId = Number(payload);
    if (Number.isSafeInteger(projectId)) onChange(projectId);
  });
}

/** Changes removed per statement: one short transaction each. */
const TRIM_CHUNK = 10_000;

/**
 * Retention: removes each project's changes applied before `before`, from its first on, and
 * records how far (change_trims). It stops at a project's first change applied at or after
 * `before`, so that what is removed is always every change up to a position, and a cursor is
 * refused exactly when changes after it were removed; and it removes only changes below the read
 * horizon, so that no change committed later can fall before that position.
 */
export async function trimChanges(sql: Db, before: Date): Promise<number> {
  let removed = 0;
  for (;;) {
    const [step] = await sql<{ removed: number }[]>`
      WITH chunk AS (
        SELECT c.project_id, c.pos_xid, c.seq, c.applied_at,
               bool_and(c.applied_at < ${before}) OVER (PARTITION BY c.project_id ORDER BY c.pos_xid, c.seq) AS expired
          FROM projects AS p,
               LATERAL (SELECT * FROM changes AS c
                         WHERE c.project_id = p.id AND c.pos_xid < pg_snapshot_xmin(pg_current_snapshot())
                         ORDER BY c.pos_xid, c.seq LIMIT ${TRIM_CHUNK}) AS c
      ), gone AS (
        DELETE FROM changes AS c USING chunk
         WHERE chunk.expired AND c.project_id = chunk.project_id AND c.pos_xid = chunk.pos_xid AND c.seq = chunk.seq
        RETURNING c.project_id, c.pos_xid, c.seq
      ), through AS (
        SELECT DISTINCT ON (project_id) project_id, pos_xid, seq FROM gone ORDER BY project_id, pos_xid DESC, seq DESC
      ), recorded AS (
        INSERT INTO change_trims AS t (project_id, pos_xid, seq, trimmed_at)
        SELECT project_id, pos_xid, seq, now() FROM through
        ON CONFLICT (project_id) DO UPDATE SET pos_xid = excluded.pos_xid, seq = excluded.seq, trimmed_at = now()
      )
      SELECT count(*)::integer AS removed FROM gone`;
    const count = step?.removed ?? 0;
    removed += count;
    if (count === 0) return removed;
  }
}
