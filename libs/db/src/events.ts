import { normalisedEventName, type TrackedEvent, type UserEvent } from "@cm/domain";
import postgres from "postgres";
import { PROJECT_EVENTS_LOCK } from "./advisory-locks";
import type { Db, Sql, Transaction } from "./connect";
import { UNIQUE_VIOLATION } from "./errors";
import { jsonRows } from "./json";

/** What storing a job's events did, and the users they name that are no profile yet. */
export interface StoredEvents {
  stored: number;
  /** Keys (per project) with no profile: no row, a row no identify created, or an erased one. */
  notProfiles: { projectId: number; key: string }[];
}

/**
 * Stores a job's events in one statement, each at most once (docs/events.md, "Stored once"):
 * an event whose deduplication key another event holds within its window is not stored; nor is
 * one stamped at or before an erasure of its user (it was acknowledged before the delete, or says
 * it happened before it). The events of one deduplication key must be collapsed first (libs/domain
 * collapseDuplicateEvents): one statement cannot claim a key twice. Runs holding each project's
 * PROJECT_EVENTS_LOCK shared, so that an erasure of events waits for it (eraseUserEvents).
 */
export async function storeEvents(sql: Sql, events: readonly TrackedEvent[]): Promise<StoredEvents> {
  if (events.length === 0) return { stored: 0, notProfiles: [] };
  // A job is nearly always applied once: its events are inserted as new, which costs Postgres
  // 1.5–3 µs an event less than skipping those it holds already (bench/README.md). A job applied
  // again (its worker died after the commit) holds events stored before: that insert breaks the
  // unique index and rolls back, claims included, and the job is stored again skipping them.
  try {
    return await sql.begin((tx) => storeEventsAs(tx, events, "new"));
  } catch (error) {
    if (!(error instanceof postgres.PostgresError && error.code === UNIQUE_VIOLATION)) throw error;
    return sql.begin((tx) => storeEventsAs(tx, events, "maybe stored"));
  }
}

/** storeEvents within a transaction of the caller's (the locks are held until it ends). */
export async function storeEventsInTransaction(
  tx: Transaction,
  events: readonly TrackedEvent[],
): Promise<StoredEvents> {
  return storeEventsAs(tx, events, "maybe stored");
}

/** An event as storeEventsAs's statement reads it: one column for each field (jsonRows). */
interface EventRow {
  project_id: number;
  user_key: string;
  id: string;
  name: string;
  name_key: string;
  data: TrackedEvent["data"];
  source: string | null;
  /** When it happened and when it was received (ms). */
  t: number;
  received: number;
  dedup_key: string | null;
  dedup_window: number | null;
}

const EVENT_COLUMNS = {
  project_id: "integer",
  user_key: "text",
  id: "uuid",
  name: "text",
  name_key: "text",
  data: "jsonb",
  source: "text",
  t: "bigint",
  received: "bigint",
  dedup_key: "text",
  dedup_window: "bigint",
} as const;

/** "new": the insert fails on an event `events` holds already; "maybe stored": it skips it. */
async function storeEventsAs(
  tx: Transaction,
  events: readonly TrackedEvent[],
  assumed: "new" | "maybe stored",
): Promise<StoredEvents> {
  const projects = [...new Set(events.map((event) => event.projectId))].sort((a, b) => a - b);
  const keys = [...new Set(events.map((event) => event.key))];
  const batch = events.map((e): EventRow => ({
    project_id: e.projectId,
    user_key: e.key,
    id: e.eventId,
    name: e.name,
    name_key: normalisedEventName(e.name),
    data: e.data,
    source: e.source ?? null,
    t: e.t,
    received: e.receivedAt,
    dedup_key: e.dedupKey ?? null,
    dedup_window: e.dedupWindowMs ?? null,
  }));
  // The projects' locks, and one plan for every job (a generic plan) on one Postgres, in one
  // round trip. Planned with a job's keys on the statistics of a profiles table that grew since
  // it was last analyzed (a new database, a first import), the lookup below read every profile
  // of the project, for each job (bench/README.md, "Events: where the time goes"). Not on Citus,
  // which cannot plan a multi-shard statement with parameters generically. The locks are taken
  // in a statement before the one that reads the profiles, so that its snapshot sees the
  // erasures that held them.
  await tx`SELECT pg_advisory_xact_lock_shared(${PROJECT_EVENTS_LOCK}::integer, p),
                  (SELECT set_config('plan_cache_mode', 'force_generic_plan', true)
                    WHERE NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus'))
             FROM (SELECT p FROM unnest(${projects}::integer[]) AS p ORDER BY p) AS ordered`;
  const [row] = await tx<{ stored: number; not_profiles: [number, string][] }[]>`
      WITH input AS (
        SELECT * FROM ${jsonRows(tx, batch, "e", EVENT_COLUMNS)}
      ), checked AS (
        SELECT i.*, p.deleted_t,
               coalesce(p.created_t IS NOT NULL AND (p.last_created_t IS NOT NULL OR p.deleted_t IS NULL), false)
                 AS is_profile
          FROM input AS i
          -- The rows of the batch's keys, named as values: Citus plans the profiles of this join
          -- apart from the input, and without them read every shard's profiles whole.
          LEFT JOIN (SELECT project_id, key, created_t, last_created_t, deleted_t FROM profiles
                      WHERE project_id = ANY(${projects}::integer[]) AND key = ANY(${keys}::text[])) AS p
            ON p.project_id = i.project_id AND p.key = i.user_key
      ), claimed AS (
        INSERT INTO event_keys AS k (project_id, key, seen_at, expires_at)
        SELECT project_id, dedup_key, received, received + dedup_window
          FROM checked
         WHERE dedup_key IS NOT NULL AND (deleted_t IS NULL OR t > deleted_t)
        ON CONFLICT (project_id, key) DO UPDATE SET seen_at = excluded.seen_at, expires_at = excluded.expires_at
         WHERE excluded.seen_at >= k.expires_at OR excluded.expires_at <= k.seen_at
        RETURNING k.project_id, k.key
      ), stored AS (
        INSERT INTO events (project_id, user_key, id, name, name_key, data, source, created_at, received_at,
                            dedup_key)
        -- ms to timestamptz exactly (to_timestamp goes through a float)
        SELECT c.project_id, c.user_key, c.id, c.name, c.name_key, c.data, c.source,
               timestamptz 'epoch' + c.t * interval '1 millisecond',
               timestamptz 'epoch' + c.received * interval '1 millisecond', c.dedup_key
          FROM checked AS c
         WHERE (c.deleted_t IS NULL OR c.t > c.deleted_t)
           AND (c.dedup_key IS NULL
                OR EXISTS (SELECT 1 FROM claimed AS k WHERE k.project_id = c.project_id AND k.key = c.dedup_key))
        ${assumed === "new" ? tx`` : tx`ON CONFLICT DO NOTHING`}
        RETURNING 1
      )
      SELECT (SELECT count(*) FROM stored)::integer AS stored,
             coalesce((SELECT jsonb_agg(DISTINCT jsonb_build_array(project_id, user_key))
                         FROM checked WHERE NOT is_profile), '[]') AS not_profiles`;
  const result = row as { stored: number; not_profiles: [number, string][] };
  return {
    stored: result.stored,
    notProfiles: result.not_profiles.map(([projectId, key]) => ({ projectId, key })),
  };
}

/** What a delete of events returns: the key each claimed, to be released with it. */
interface DeletedEvent {
  dedup_key: string | null;
  received_at: Date;
}

/**
 * The deduplication keys that deleted events still hold go with them: a key left behind refused
 * the same event sent again, a 200 never stored. A key another event claimed since (its
 * `seen_at` is that event's receive time) stays: it holds that event's place.
 */
async function releaseEventKeys(tx: Db, projectId: number, deleted: readonly DeletedEvent[]): Promise<void> {
  const held = deleted.filter((event): event is DeletedEvent & { dedup_key: string } => event.dedup_key !== null);
  if (held.length === 0) return;
  const keys = held.map((event) => event.dedup_key);
  await tx`
    DELETE FROM event_keys AS k
     USING unnest(${keys}::text[], ${held.map((event) => event.received_at.getTime())}::bigint[]) AS x(key, seen_at)
     WHERE k.project_id = ${projectId} AND k.key = x.key AND k.seen_at = x.seen_at
       -- The keys again as values, so that Citus sends the delete to their shards, not every one.
       AND k.key = ANY(${keys}::text[])`;
}

/**
 * Part of erasures (docs/events.md, "Erasure"): for each erased key of the project, its events
 * stamped at or before its erasure's `t` go, with the deduplication keys they hold, all in one
 * transaction. Takes the project's PROJECT_EVENTS_LOCK exclusively, so that event writes in
 * flight end first; a write after it sees the erased rows' stamps and stores nothing stamped
 * before them. One transaction per project and job: one per erasure made a job of mixed traffic
 * wait on a commit per delete.
 */
export async function eraseUserEvents(
  sql: Sql,
  projectId: number,
  erased: readonly { key: string; t: number }[],
): Promise<number> {
  if (erased.length === 0) return 0;
  return sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${PROJECT_EVENTS_LOCK}::integer, ${projectId}::integer)`;
    // Each erasure's time is sent as a timestamptz rather than computed from its ms in the
    // statement: Citus refuses a DELETE that calls a STABLE function on a column (docs/scaling.md).
    const keys = erased.map((x) => x.key);
    const deleted = await tx<DeletedEvent[]>`
      DELETE FROM events AS e
       USING unnest(${keys}::text[],
                    ${erased.map((x) => new Date(x.t).toISOString())}::timestamptz[]) AS x(key, erased_at)
       WHERE e.project_id = ${projectId} AND e.user_key = x.key AND e.created_at <= x.erased_at
         -- The keys again as values, so that Citus sends the delete to their shards, not every one.
         AND e.user_key = ANY(${keys}::text[])
      RETURNING e.dedup_key, e.received_at`;
    await releaseEventKeys(tx, projectId, deleted);
    return deleted.length;
  });
}

/** `ctl events delete`: a user's events that happened in [from, to), whatever their stamps, and the keys they hold. */
export async function deleteUserEventsBetween(
  sql: Sql,
  projectId: number,
  keys: readonly string[],
  from: Date | null,
  to: Date | null,
): Promise<number> {
  return sql.begin(async (tx) => {
    const deleted = await tx<DeletedEvent[]>`
      DELETE FROM events
       WHERE project_id = ${projectId} AND user_key = ANY(${keys as string[]}::text[])
         AND (${from}::timestamptz IS NULL OR created_at >= ${from})
         AND (${to}::timestamptz IS NULL OR created_at < ${to})
      RETURNING dedup_key, received_at`;
    await releaseEventKeys(tx, projectId, deleted);
    return deleted.length;
  });
}

export interface StoredEvent {
  id: string;
  name: string;
  data: Record<string, unknown> | null;
  source: string | null;
  created_at: Date;
  received_at: Date;
}

/** What every read of events selects: a StoredEvent. */
const STORED_EVENT_COLUMNS: (keyof StoredEvent)[] = ["id", "name", "data", "source", "created_at", "received_at"];

/** An event as every read shows it. */
export function userEventOf(row: StoredEvent): UserEvent {
  return {
    id: row.id,
    event_name: row.name,
    data: row.data,
    source: row.source,
    created_at: row.created_at.toISOString(),
    received_at: row.received_at.toISOString(),
  };
}

export interface EventQuery {
  /** Normalised event name (libs/domain normalisedEventName). */
  nameKey: string | null;
  since: Date | null;
  until: Date | null;
  /** The last event of the previous page: the next page starts after it. */
  after: { createdAt: Date; id: string } | null;
  limit: number;
}

/** The events of every one of these keys, by key and then oldest first (a page of an export's profiles). */
export async function eventsOfKeys(
  sql: Db,
  projectId: number,
  keys: readonly string[],
): Promise<(StoredEvent & { user_key: string })[]> {
  return sql<(StoredEvent & { user_key: string })[]>`
    SELECT user_key, ${sql(STORED_EVENT_COLUMNS)}
      FROM events
     WHERE project_id = ${projectId} AND user_key = ANY(${keys as string[]}::text[])
     ORDER BY user_key, created_at, id`;
}

/** Where a read of events oldest first goes on: after this event. */
export interface EventPosition {
  /** Its created_at in µs since the epoch: exact, where a Date would drop the µs Postgres keeps. */
  createdAtUs: string;
  id: string;
}

/** A page of events, and where the next starts (null after the last). */
export interface EventPage {
  events: StoredEvent[];
  next: EventPosition | null;
}

/**
 * A page of the events of a user's ids, oldest first (ties by id), after `after`: one short
 * query, so that a reader who pages through them holds no connection in between.
 */
export async function userEventsAfter(
  sql: Db,
  projectId: number,
  keys: readonly string[],
  after: EventPosition | null,
  limit: number,
): Promise<EventPage> {
  // One key (most users) by equality: its index gives the events in order, and the page reads
  // `limit` of them; `= ANY` of several keys sorts the user's events after `after` each page.
  const ofUser =
    keys.length === 1 ? sql`user_key = ${keys[0] as string}` : sql`user_key = ANY(${keys as string[]}::text[])`;
  const rows = await sql<(StoredEvent & { created_at_us: string })[]>`
    SELECT ${sql(STORED_EVENT_COLUMNS)}, (extract(epoch FROM created_at) * 1000000)::bigint AS created_at_us
      FROM events
     WHERE project_id = ${projectId} AND ${ofUser}
       ${
         after === null
           ? sql``
           : sql`AND (created_at, id) > (timestamptz 'epoch' + ${after.createdAtUs}::bigint * interval '1 microsecond',
                                         ${after.id}::uuid)`
       }
     ORDER BY created_at, id
     LIMIT ${limit}`;
  const last = rows.length === limit ? rows[limit - 1] : undefined;
  return {
    events: rows.map(({ created_at_us: _, ...event }) => event),
    next: last === undefined ? null : { createdAtUs: last.created_at_us, id: last.id },
  };
}

/** The events of a user's ids, newest first (ties by id), one page and one more to tell if there is a next. */
export async function findUserEvents(
  sql: Db,
  projectId: number,
  keys: readonly string[],
  query: EventQuery,
): Promise<StoredEvent[]> {
  return sql<StoredEvent[]>`
    SELECT ${sql(STORED_EVENT_COLUMNS)}
      FROM events
     WHERE project_id = ${projectId} AND user_key = ANY(${keys as string[]}::text[])
       ${query.nameKey === null ? sql`` : sql`AND name_key = ${query.nameKey}`}
       ${query.since === null ? sql`` : sql`AND created_at >= ${query.since}`}
       ${query.until === null ? sql`` : sql`AND created_at < ${query.until}`}
       ${query.after === null ? sql`` : sql`AND (created_at, id) < (${query.after.createdAt}, ${query.after.id}::uuid)`}
     ORDER BY created_at DESC, id DESC
     LIMIT ${query.limit + 1}`;
}

/** How many events a user's key has, and when the latest happened. */
export interface EventSummary {
  count: number;
  last: Date | null;
}

/** The EventSummary of each of these keys that has events (one read for a whole page of profiles). */
export async function eventSummaries(
  sql: Db,
  projectId: number,
  keys: readonly string[],
): Promise<Map<string, EventSummary>> {
  const rows = await sql<({ key: string } & EventSummary)[]>`
    SELECT user_key AS key, count(*)::integer AS count, max(created_at) AS last
      FROM events WHERE project_id = ${projectId} AND user_key = ANY(${keys as string[]}::text[])
     GROUP BY user_key`;
  return new Map(rows.map(({ key, count, last }) => [key, { count, last }]));
}
