import {
  FIRST_POSITION,
  feedChange,
  laterPosition,
  positionBefore,
  profileWriteChanges,
  type ChangePosition,
  type ChangeType,
  type ProfileImage,
  type ProfileWriteChange,
} from "@cm/domain";
import { CHANGE_EPOCHS_LOCK } from "./advisory-locks";
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

/** A row of `changes` as read: a profile's write (profile.written) holds the row before and after it. */
type StoredRow = { position: ChangePosition; userId: string | null; appliedAt: string } & (
  | { type: "profile.written"; change: { before: ProfileImage | null; after: ProfileImage } }
  | { type: ChangeType; change: Record<string, unknown> }
);

interface ChangesReadRow {
  changes: StoredRow[] | null;
  matched: number;
  kept: number;
  scanned: number;
  last_kept: ChangePosition | null;
  last_scanned: ChangePosition | null;
  horizon: ChangePosition;
  trimmed: ChangePosition | null;
}

/**
 * What the rows of one page of the feed may hold (docs/changes.md, "What one read holds"), in
 * bytes as Postgres holds their values uncompressed (profile_image_bytes: a profile's write as
 * its row before and after, an event's data): the page ends before the row that would start past
 * it, and `next` says where to read on. Its first row is always read, so that the cursor moves: a
 * page holds this and one row at most, which migration 029's bounds of a profile row keep to a
 * few MiB. A webhook's batch is such a page. Only the rows whose stored size, compressed, adds up
 * to it are measured: a row uncompressed is no smaller, and measuring it means decompressing it.
 */
export const CHANGE_PAGE_BYTES = 4 * 1024 * 1024;

/**
 * Changes a read with a `types` filter goes through at most: a type that is rare costs a read no
 * more than this, and the reader's next cursor moves past them all the same.
 */
const FILTERED_SCAN_ROWS = 10_000;

/**
 * On Citus (docs/scaling.md, "The change feed on Citus"): the feed's epoch moves on at most this
 * often, and a read waits at most this long for the epochs before it to close.
 */
const EPOCH_BUMP_AFTER_MS = 100;
const EPOCH_CLOSE_WAIT_MS = 100;

/**
 * How this database orders its feed, and how far a reader may read: on one Postgres (`closed`
 * null), by transaction id, below the oldest transaction still running; on Citus, every epoch up
 * to `closed`, which this call moves on when it can (change_feed_closed,
 * libs/db/functions/change_feed.sql). `bumpAfterMs`: 0 moves the epoch on whenever it can.
 */
async function closedEpoch(sql: Db, bumpAfterMs = EPOCH_BUMP_AFTER_MS): Promise<string | null> {
  const [row] = await sql<{ closed: string | null }[]>`
    SELECT change_feed_closed(${CHANGE_EPOCHS_LOCK}, ${bumpAfterMs}, ${EPOCH_CLOSE_WAIT_MS})::text AS closed`;
  return row?.closed ?? null;
}

/** What a read of the feed is made of, as one Postgres or Citus orders it (closedEpoch). */
function feedOrder(sql: Db, closed: string | null) {
  if (closed === null) {
    return {
      columns: sql`pos_xid, seq`,
      columnsDesc: sql`pos_xid DESC, seq DESC`,
      row: sql`(c.pos_xid, c.seq)`,
      position: (p: ChangePosition) => sql`(${p.xid}::xid8, ${p.seq}::bigint)`,
      readable: sql`c.pos_xid < pg_snapshot_xmin(pg_current_snapshot())`,
      horizon: sql`json_build_object('epoch', '0', 't', '0', 'node', '0', 'xid', pg_snapshot_xmin(pg_current_snapshot())::text, 'seq', '0')`,
    };
  }
  return {
    columns: sql`pos_epoch, pos_t, pos_node, pos_xid, seq`,
    columnsDesc: sql`pos_epoch DESC, pos_t DESC, pos_node DESC, pos_xid DESC, seq DESC`,
    row: sql`(c.pos_epoch, c.pos_t, c.pos_node, c.pos_xid, c.seq)`,
    position: (p: ChangePosition) =>
      sql`(${p.epoch}::bigint, ${p.t}::bigint, ${p.node}::integer, ${p.xid}::xid8, ${p.seq}::bigint)`,
    readable: sql`c.pos_epoch <= ${closed}::bigint`,
    horizon: sql`json_build_object('epoch', (${closed}::bigint + 1)::text, 't', '0', 'node', '0', 'xid', '0', 'seq', '0')`,
  };
}

/** A row's position as JSON (ChangePosition): on one Postgres its first three parts are null, read as 0. */
const positionJson = (sql: Db, alias: string) => sql`
  json_build_object('epoch', coalesce(${sql(alias)}.pos_epoch, 0)::text, 't', coalesce(${sql(alias)}.pos_t, 0)::text,
                    'node', coalesce(${sql(alias)}.pos_node, 0)::text, 'xid', ${sql(alias)}.pos_xid::text,
                    'seq', ${sql(alias)}.seq::text)`;

/**
 * The columns of a profile's row whose change may make a change of each type (profileWriteChanges),
 * besides the stamps of its life, which any may: a filtered read reads no other profile's write.
 */
const PROFILE_COLUMNS_OF_TYPE: Partial<Record<ChangeType, readonly string[]>> = {
  "profile.created": [],
  "profile.changed": ["email", "phone_number", "data", "channels"],
  "tags.changed": ["tags"],
  unsubscribed: ["unsubscribed"],
  resubscribed: ["unsubscribed"],
  "topic.choice_changed": ["topic_choices", "topic_defaults"],
  "user.erased": [],
};
const LIFE_STAMPS = ["created_t", "last_created_t", "deleted_t"];

/** The rows of a read that may hold changes of `types`. */
function holdingTypes(sql: Db, types: readonly ChangeType[]) {
  const named = sql`type = ANY(${types as string[]}::text[])`;
  if (!types.some((type) => type in PROFILE_COLUMNS_OF_TYPE)) return named;
  const columns = [...new Set([...LIFE_STAMPS, ...types.flatMap((type) => PROFILE_COLUMNS_OF_TYPE[type] ?? [])])];
  const of = (image: "before" | "after") =>
    columns.map((column) => sql`(${sql(image)}).${sql(column)}`).reduce((list, field) => sql`${list}, ${field}`);
  return sql`(${named} OR (type = 'profile.written' AND (${of("before")}) IS DISTINCT FROM (${of("after")})))`;
}

/** The changes of the feed a stored row makes, each at its position (ChangePosition `index`). */
function changesOf(row: StoredRow): StoredChange[] {
  const made: ProfileWriteChange[] =
    row.type === "profile.written"
      ? profileWriteChanges(row.change.before, row.change.after)
      : [{ type: row.type, userId: row.userId, change: feedChange(row.type, row.change) }];
  const appliedAt = new Date(row.appliedAt);
  return made.map((change, i) => ({
    ...change,
    position: i === made.length - 1 ? row.position : { ...row.position, index: String(i) },
    appliedAt,
  }));
}

/**
 * The project's changes after `after` (from its first when null), at most `limit`, in position
 * order, of `types` only when given, from rows holding at most `maxBytes` but for the last
 * (CHANGE_PAGE_BYTES); and, read in the same snapshot, how far retention trimmed
 * the project's changes (a cursor before it has lost changes: the caller refuses it).
 *
 * Only changes below the read horizon are read. On one Postgres that is the oldest transaction
 * still running (pg_snapshot_xmin): a change that is not visible yet belongs to a transaction that
 * is still running or starts later, whose position is at least that horizon (profiles.change_xid
 * never moves a change before its own transaction), so it comes after everything read here, and
 * a reader resuming from `next` misses nothing (docs/changes.md, "Why nothing is skipped"). On
 * Citus it is the first epoch not closed: every change of the epochs before it is committed, and
 * every later one has a later epoch (docs/scaling.md, "The change feed on Citus"). So when the
 * read went through every change below the horizon, `next` is the horizon itself: a reader
 * filtering a rare type does not go through the same changes again.
 *
 * An event's change is rendered from its event's row, so that the erasure of the event takes it
 * out of the feed, and so does its profile's erasure stamped at or after it, from the commit of
 * that erasure on, before the job erases the event itself (docs/changes.md, "Erasure"); the
 * user's id is its profile's. A profile's write is stored as its row before and after, and its
 * changes worked out here (libs/domain profileWriteChanges); a page may end inside one such row,
 * and the next read starts at its next change.
 */
export async function readChanges(
  sql: Db,
  projectId: number,
  after: ChangePosition | null,
  limit: number,
  types: readonly ChangeType[] | null,
  maxBytes = CHANGE_PAGE_BYTES,
): Promise<ChangesRead> {
  const from = after ?? FIRST_POSITION;
  const scan = types === null ? limit : Math.max(limit, FILTERED_SCAN_ROWS);
  const order = feedOrder(sql, await closedEpoch(sql));
  // A position inside a row reads the row again, for its changes after that one.
  const fromRow = from.index === undefined ? sql`>` : sql`>=`;
  // The page's rows are measured (stored, then kept) over `joined` once it is read, so that on
  // Citus the windows run over a result gathered on the coordinator, not over a join of
  // distributed tables (not measured on Citus here).
  const [row] = await sql<ChangesReadRow[]>`
    WITH scanned AS (
      SELECT c.* FROM changes AS c
       WHERE c.project_id = ${projectId} AND ${order.row} ${fromRow} ${order.position(from)} AND ${order.readable}
       ORDER BY ${order.columns}
       LIMIT ${scan}
    ), page AS (
      SELECT * FROM scanned
       ${types === null ? sql`` : sql`WHERE ${holdingTypes(sql, types)}`}
       ORDER BY ${order.columns}
       LIMIT ${limit}
    ), joined AS MATERIALIZED (
      SELECT p.*, e.id AS e_id, e.name AS e_name, e.data AS e_data, e.source AS e_source,
             e.created_at AS e_created_at, e.received_at AS e_received_at, u.external_id AS u_external_id,
             u.deleted_t AS u_deleted_t
        FROM page AS p
        LEFT JOIN events AS e
          ON p.type = 'event.stored' AND e.project_id = p.project_id AND e.user_key = p.user_key
         AND e.created_at = p.event_at AND e.id = p.event_id
        LEFT JOIN profiles AS u ON p.type = 'event.stored' AND u.project_id = p.project_id AND u.key = p.user_key
    ), stored AS (
      SELECT j.*, sum(coalesce(pg_column_size(j.before), 0) + coalesce(pg_column_size(j.after), 0)
                      + coalesce(pg_column_size(j.change), 0) + coalesce(pg_column_size(j.e_data), 0))
                    OVER (ORDER BY ${order.columns} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS stored_before
        FROM joined AS j
    ), kept AS (
      SELECT * FROM (
        SELECT s.*, sum(profile_image_bytes(s.before) + profile_image_bytes(s.after)
                        + coalesce(pg_column_size(s.change || '{}'), 0) + coalesce(pg_column_size(s.e_data || '{}'), 0))
                      OVER (ORDER BY ${order.columns} ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS bytes_before
          FROM stored AS s
         WHERE coalesce(s.stored_before, 0) < ${maxBytes}::bigint) AS measured
       WHERE coalesce(bytes_before, 0) < ${maxBytes}::bigint
    ), rendered AS (
      SELECT p.pos_epoch, p.pos_t, p.pos_node, p.pos_xid, p.seq,
             json_build_object('position', ${positionJson(sql, "p")},
                               'type', p.type,
                               'userId', coalesce(p.user_id, p.u_external_id),
                               'appliedAt', p.applied_at,
                               'change', CASE WHEN p.type = 'event.stored'
                                              THEN json_build_object('id', p.e_id, 'event_name', p.e_name,
                                                                     'data', p.e_data, 'source', p.e_source,
                                                                     'created_at', p.e_created_at,
                                                                     'received_at', p.e_received_at)
                                              WHEN p.type = 'profile.written'
                                              THEN json_build_object('before', p.before, 'after', p.after)
                                              ELSE p.change::json END) AS change,
             p.type <> 'event.stored'
               OR (p.e_id IS NOT NULL
                   AND (p.u_deleted_t IS NULL
                        OR p.e_created_at > timestamptz 'epoch' + p.u_deleted_t * interval '1 millisecond'))
               AS served
        FROM kept AS p
    )
    SELECT (SELECT json_agg(change ORDER BY ${order.columns}) FILTER (WHERE served) FROM rendered) AS changes,
           (SELECT count(*)::integer FROM page) AS matched,
           (SELECT count(*)::integer FROM kept) AS kept,
           (SELECT count(*)::integer FROM scanned) AS scanned,
           (SELECT ${positionJson(sql, "kept")} FROM kept ORDER BY ${order.columnsDesc} LIMIT 1) AS last_kept,
           (SELECT ${positionJson(sql, "scanned")} FROM scanned ORDER BY ${order.columnsDesc} LIMIT 1) AS last_scanned,
           ${order.horizon} AS horizon,
           (SELECT ${positionJson(sql, "t")} FROM change_trims AS t WHERE project_id = ${projectId}) AS trimmed`;
  const read = row as ChangesReadRow;
  const changes = (read.changes ?? [])
    .flatMap(changesOf)
    .filter((change) => positionBefore(from, change.position) && (types === null || types.includes(change.type)));
  const trimmedThrough = read.trimmed;
  // A full page: what follows its last change is still to read.
  if (changes.length >= limit) {
    const page = changes.slice(0, limit);
    return { changes: page, next: (page[limit - 1] as StoredChange).position, caughtUp: false, trimmedThrough };
  }
  // Every row the page could hold was read, or as many as its bytes allow: what follows the last is still to read.
  if ((read.matched === limit || read.kept < read.matched) && read.last_kept !== null) {
    return { changes, next: read.last_kept, caughtUp: false, trimmedThrough };
  }
  // A filter's scan cut short: what follows the last change it went through is still to read.
  if (read.scanned === scan && read.last_scanned !== null) {
    return { changes, next: read.last_scanned, caughtUp: false, trimmedThrough };
  }
  // Every change below the horizon was gone through: any other has a position at or past it.
  return { changes, next: laterPosition(from, read.horizon), caughtUp: true, trimmedThrough };
}

/**
 * Where a new endpoint's cursor starts: the feed's read horizon now, as readChanges gives it to a
 * reader that is caught up. The endpoint gets every change committed from now on (and those of the
 * transactions still running; on Citus, those of the epoch still open), none before.
 */
export async function changeFeedNow(sql: Db): Promise<ChangePosition> {
  const order = feedOrder(sql, await closedEpoch(sql, 0));
  const [row] = await sql<{ horizon: ChangePosition }[]>`SELECT ${order.horizon} AS horizon`;
  return (row as { horizon: ChangePosition }).horizon;
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

/** Changes removed per transaction: each a short one. */
const TRIM_CHUNK = 10_000;

/**
 * Retention: removes each project's changes applied before `before`, from its first on, and
 * records how far (change_trims). It stops at a project's first change applied at or after
 * `before`, so that what is removed is always every change up to a position, and a cursor is
 * refused exactly when changes after it were removed; and it removes only changes below the read
 * horizon, so that no change committed later can fall before that position. A project at a time,
 * in chunks: on Citus its changes are on every node.
 */
export async function trimChanges(sql: Sql, before: Date): Promise<number> {
  const order = feedOrder(sql, await closedEpoch(sql));
  let removed = 0;
  for (const { id } of await sql<{ id: number }[]>`SELECT id FROM projects ORDER BY id`) {
    for (;;) {
      const count = await sql.begin(async (tx) => {
        // The last change before the first one kept, among the project's first changes.
        const [last] = await tx<{ through: ChangePosition }[]>`
          WITH chunk AS (
            SELECT c.pos_epoch, c.pos_t, c.pos_node, c.pos_xid, c.seq, c.applied_at FROM changes AS c
             WHERE c.project_id = ${id} AND ${order.readable}
             ORDER BY ${order.columns} LIMIT ${TRIM_CHUNK}
          ), kept AS (
            SELECT * FROM chunk WHERE applied_at >= ${before} ORDER BY ${order.columns} LIMIT 1
          )
          SELECT ${positionJson(tx, "c")} AS through FROM chunk AS c
           WHERE NOT EXISTS (SELECT FROM kept) OR (${order.columns}) < (SELECT ${order.columns} FROM kept)
           ORDER BY ${order.columnsDesc} LIMIT 1`;
        if (last === undefined) return 0;
        const { through } = last;
        const gone =
          await tx`DELETE FROM changes AS c WHERE c.project_id = ${id} AND ${order.row} <= ${order.position(through)}`;
        await tx`
          INSERT INTO change_trims AS t (project_id, pos_epoch, pos_t, pos_node, pos_xid, seq, trimmed_at)
          VALUES (${id}, ${through.epoch}::bigint, ${through.t}::bigint, ${through.node}::integer, ${through.xid}::xid8,
                  ${through.seq}::bigint, now())
          ON CONFLICT (project_id) DO UPDATE
            SET pos_epoch = excluded.pos_epoch, pos_t = excluded.pos_t, pos_node = excluded.pos_node,
                pos_xid = excluded.pos_xid, seq = excluded.seq, trimmed_at = excluded.trimmed_at`;
        return gone.count;
      });
      removed += count;
      if (count === 0) break;
    }
  }
  return removed;
}
