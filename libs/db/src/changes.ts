import type { Db } from "./connect";

/**
 * Where a change is in its project's feed: the transaction that made it (an xid8, as decimal
 * text) and its number (a bigint, as decimal text). Positions are compared as (xid, seq).
 */
export interface ChangePosition {
  xid: string;
  seq: string;
}

/** A change as the feed serves it (migration 022, docs/changes.md). */
export interface StoredChange {
  position: ChangePosition;
  type: string;
  userId: string | null;
  appliedAt: Date;
  change: Record<string, unknown>;
}

export interface ChangesRead {
  changes: StoredChange[];
  /** The position of the last change read, served or not (an event's change whose event is gone is not). */
  last: ChangePosition | null;
  /** Retention removed every change of the project up to here (change_trims); null when it never removed one. */
  trimmedThrough: ChangePosition | null;
}

interface ChangesReadRow {
  changes: (Omit<StoredChange, "appliedAt"> & { appliedAt: string })[] | null;
  last: ChangePosition | null;
  trimmed: ChangePosition | null;
}

/**
 * The project's changes after `after` (from its first when null), at most `limit`, in position
 * order, of `types` only when given; and, read in the same snapshot, how far retention trimmed
 * the project's changes (a cursor before it has lost changes: the caller refuses it).
 *
 * Only changes of transactions older than every transaction still running are read
 * (pg_snapshot_xmin): a change that is not visible yet belongs to a transaction that is still
 * running or starts later, whose position is at least that horizon (profiles.change_xid never
 * moves a change before its own transaction), so it comes after everything read here, and a
 * reader resuming from the last position it got misses nothing (docs/changes.md, "Why nothing is
 * skipped"). An event's change is rendered from its event's row, so that the erasure of the event
 * takes it out of the feed; the user's id is its profile's.
 */
export async function readChanges(
  sql: Db,
  projectId: number,
  after: ChangePosition | null,
  limit: number,
  types: readonly string[] | null,
): Promise<ChangesRead> {
  const from = after ?? { xid: "0", seq: "0" };
  const [row] = await sql<ChangesReadRow[]>`
    WITH page AS (
      SELECT c.* FROM changes AS c
       WHERE c.project_id = ${projectId}
         AND (c.pos_xid, c.seq) > (${from.xid}::xid8, ${from.seq}::bigint)
         AND c.pos_xid < pg_snapshot_xmin(pg_current_snapshot())
         ${types === null ? sql`` : sql`AND c.type = ANY(${types as string[]}::text[])`}
       ORDER BY c.pos_xid, c.seq
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
             p.type <> 'event.stored' OR e.id IS NOT NULL AS served
        FROM page AS p
        LEFT JOIN events AS e
          ON p.type = 'event.stored' AND e.project_id = p.project_id AND e.user_key = p.user_key
         AND e.created_at = p.event_at AND e.id = p.event_id
        LEFT JOIN profiles AS u ON p.type = 'event.stored' AND u.project_id = p.project_id AND u.key = p.user_key
    )
    SELECT (SELECT json_agg(change ORDER BY pos_xid, seq) FILTER (WHERE served) FROM rendered) AS changes,
           (SELECT json_build_object('xid', pos_xid::text, 'seq', seq::text) FROM rendered
             ORDER BY pos_xid DESC, seq DESC LIMIT 1) AS last,
           (SELECT json_build_object('xid', pos_xid::text, 'seq', seq::text) FROM change_trims
             WHERE project_id = ${projectId}) AS trimmed`;
  const read = row as ChangesReadRow;
  return {
    changes: (read.changes ?? []).map((change) => ({ ...change, appliedAt: new Date(change.appliedAt) })),
    last: read.last,
    trimmedThrough: read.trimmed,
  };
}

/** Whether position `a` comes before `b`. */
export function positionBefore(a: ChangePosition, b: ChangePosition): boolean {
  const [ax, bx] = [BigInt(a.xid), BigInt(b.xid)];
  return ax < bx || (ax === bx && BigInt(a.seq) < BigInt(b.seq));
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
