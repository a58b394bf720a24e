import { ProfileTooLarge, stampBounds, type BoundedProfileMap, type ProfileState } from "@cm/domain";
import postgres from "postgres";
import type { Db } from "./connect";
import { jsonRows } from "./json";

export interface ProfileWrite {
  projectId: number;
  key: string;
  externalId: string | null;
  state: ProfileState;
  /**
   * The stamp of a reidentify naming the row by its id (its new id), which holds no value: the
   * id outlives an erasure stamped before it like a value would.
   */
  namedT?: number;
}

export interface ApplyResult {
  applied: number;
  /** Topic choices dropped because the topic is not one of the profile's project. */
  ignoredTopics: { projectId: number; key: string; topicIds: string[] }[];
}

/**
 * Whether every stamp of the incoming write is newer than every stamp of the row, and the write
 * erases nothing: then each of its values wins, and the merge is the write laid over the row
 * (libs/domain stampBounds). The row's newest_t is trusted only while newest_t_at is its
 * updated_at (migration 009 says why).
 */
function freshWrite(sql: Db) {
  return sql`(excluded.deleted_t IS NULL AND p.newest_t_at = p.updated_at
              AND excluded.write_oldest_t > coalesce(p.newest_t, -1))`;
}

/**
 * The newer of a register's two stamped values, without it when the row's resulting erasure
 * removes it. Postgres does not inline lww_kept around lww_newest (its argument is used twice and
 * costs too much to repeat since lww_is_newer is a CASE, libs/db/functions/lww.sql), and a call of a SQL
 * function per row and register cost a fifth of an update: without an erasure, the common
 * case, it is not called.
 */
function newestRegister(sql: Db, column: "email" | "phone_number" | "unsubscribed") {
  const register = sql(column);
  return sql`
    CASE WHEN p.deleted_t IS NULL AND excluded.deleted_t IS NULL THEN lww_newest(p.${register}, excluded.${register})
         ELSE lww_kept(lww_newest(p.${register}, excluded.${register}), greatest(p.deleted_t, excluded.deleted_t)) END`;
}

/**
 * The domain (migration 029) each bounded map of a row is cast to where a write makes it anew, so
 * that a write taking it past PROFILE_MAP_BYTES fails, and the map it names.
 */
const BOUNDED_MAPS: Record<BoundedProfileMap, string> = {
  data: "profile_data",
  tags: "profile_tags",
  channels: "profile_channels",
};

/**
 * The merge of a map of stamped values: the newer entry of each key, without those the row's
 * resulting erasure removes (see applyProfileWrites). Written into the statement rather than
 * made a SQL function: Postgres cannot inline a function holding a subquery, and calling one per
 * row cost a third of the statement's time. A map the write leaves alone (most identifies carry
 * no tags or topic choices) is kept as it is without starting the subquery: that took a tenth of
 * the CPU of an update. So is a write newer than the row (freshWrite): the merge was half of an
 * update's cost (docs/scaling.md). A bounded map made anew is cast to its domain, which measures
 * it; one the write leaves alone or only erases from is not, so that a row already past a bound
 * (written before migration 029) still takes its other writes and its erasure.
 */
function mergedMap(sql: Db, column: "data" | "channels" | "topic_choices" | "tags") {
  const map = sql(column);
  const bounded = (merged: postgres.PendingQuery<postgres.Row[]>) =>
    column === "topic_choices" ? merged : sql`(${merged})::${sql(BOUNDED_MAPS[column])}`;
  return sql`
    CASE WHEN excluded.${map} = '{}' AND excluded.deleted_t IS NULL THEN p.${map}
         WHEN excluded.${map} = '{}' THEN lww_kept_map(p.${map}, greatest(p.deleted_t, excluded.deleted_t))
         WHEN ${freshWrite(sql)} THEN ${bounded(sql`p.${map} || excluded.${map}`)}
         ELSE ${bounded(sql`
           CASE WHEN excluded.deleted_t IS NULL THEN p.${map}
                ELSE lww_kept_map(p.${map}, greatest(p.deleted_t, excluded.deleted_t)) END
           || coalesce((SELECT jsonb_object_agg(i.key, i.value) FROM jsonb_each(excluded.${map}) AS i
                         WHERE (NOT p.${map} ? i.key OR lww_is_newer(i.value, p.${map} -> i.key))
                           AND lww_after((i.value ->> 't')::bigint, greatest(p.deleted_t, excluded.deleted_t))),
                       '{}')`)} END`;
}

/** The newest stamp the row holds once the write is merged into it (the row's is trusted as freshWrite says). */
function mergedNewestT(sql: Db) {
  return sql`
    greatest(CASE WHEN p.newest_t_at = p.updated_at THEN p.newest_t
                  ELSE lww_row_newest_t(p.created_t, p.last_created_t, p.deleted_t, p.email, p.phone_number,
                                        p.unsubscribed, p.data, p.channels, p.topic_choices, p.tags) END,
             excluded.newest_t)`;
}

/** A stored row of profiles, as read. */
interface ProfileRow {
  key: string;
  external_id: string | null;
  created_t: number | null;
  last_created_t: number | null;
  deleted_t: number | null;
  email: ProfileState["email"];
  phone_number: ProfileState["phoneNumber"];
  data: ProfileState["data"];
  channels: ProfileState["channels"];
  topic_choices: ProfileState["topics"];
  tags: ProfileState["tags"];
  unsubscribed: ProfileState["unsubscribed"];
  updated_at: Date;
}

/** A profile write as the merge below reads it: one column for each field (jsonRows). */
interface ProfileWriteRow extends Omit<ProfileRow, "updated_at"> {
  project_id: number;
  /** The newest stamp the write holds, its new id's (namedT) included (the row's newest_t once merged). */
  newest_t: number | null;
  /** The oldest (the row's write_oldest_t, which freshWrite compares). */
  write_oldest_t: number | null;
}

const PROFILE_WRITE_COLUMNS = {
  project_id: "integer",
  key: "text",
  external_id: "text",
  created_t: "bigint",
  last_created_t: "bigint",
  deleted_t: "bigint",
  email: "jsonb",
  phone_number: "jsonb",
  data: "jsonb",
  channels: "jsonb",
  topic_choices: "jsonb",
  tags: "jsonb",
  unsubscribed: "jsonb",
  newest_t: "bigint",
  write_oldest_t: "bigint",
} as const;

/**
 * Merges a batch of profile states into the stored ones in a single statement, exactly as
 * libs/domain's mergeStates does; states are as mergeStates leaves them (nothing kept that their
 * own erasure removes). Each profile must appear once (merge duplicates first); rows are written
 * in key order so that two workers writing overlapping batches lock rows in the same order and
 * cannot deadlock.
 */
export async function applyProfileWrites(sql: Db, writes: readonly ProfileWrite[]): Promise<ApplyResult> {
  const rows = writes.map((w): ProfileWriteRow => {
    const bounds = stampBounds(w.state);
    const newest = w.namedT === undefined ? bounds?.newest : Math.max(w.namedT, bounds?.newest ?? -Infinity);
    return {
      project_id: w.projectId,
      key: w.key,
      external_id: w.externalId,
      created_t: w.state.createdT,
      last_created_t: w.state.lastCreatedT,
      deleted_t: w.state.deletedT,
      email: w.state.email,
      phone_number: w.state.phoneNumber,
      data: w.state.data,
      channels: w.state.channels,
      topic_choices: w.state.topics,
      tags: w.state.tags,
      unsubscribed: w.state.unsubscribed,
      newest_t: newest ?? null,
      write_oldest_t: bounds?.oldest ?? w.namedT ?? null,
    };
  });
  // Topic ids are compared as bigint: a choice for an id past the integer range names no topic
  // of ours and is ignored like any unknown topic, instead of failing the cast.
  //
  // The erasure: `greatest(p.deleted_t, excluded.deleted_t)` is the row's resulting deleted_t
  // (greatest skips nulls), and every value stamped at or before it goes, incoming ones as they
  // are merged, stored ones only when an erasure arrives (the stored row keeps nothing its own
  // erasure removed). Without any erasure each of these is a test of a null, so the identify
  // path stays as fast. last_created_t counts created_t too while the row has no erasure: a
  // worker older than migration 008 creates rows without it.
  //
  // The id (external_id) stays only while the row holds something stamped after its erasure:
  // what an erasure keeps is keyed by a hash of the id, never the id itself (migration 015).
  //
  // One INSERT … SELECT and nothing around it: Citus sends it to the shards in one step, each
  // its rows, where a statement of CTEs took four (docs/scaling.md). The time is part of the
  // inserted row, as Citus allows no function but an immutable one in DO UPDATE SET.
  const result = await sql`
    INSERT INTO profiles AS p (project_id, key, external_id, created_t, last_created_t, deleted_t, email, phone_number,
                               data, channels, topic_choices, tags, unsubscribed, newest_t, newest_t_at, write_oldest_t,
                               updated_at)
    SELECT r.project_id, r.key, CASE WHEN r.deleted_t IS NULL OR r.newest_t > r.deleted_t THEN r.external_id END,
           r.created_t, r.last_created_t, r.deleted_t, r.email, r.phone_number,
           r.data::profile_data, r.channels::profile_channels,
           CASE WHEN r.topic_choices = '{}' THEN '{}'::jsonb
                ELSE coalesce((SELECT jsonb_object_agg(c.key, c.value)
                                 FROM jsonb_each(r.topic_choices) AS c
                                 JOIN topics AS t ON t.id = c.key::bigint AND t.project_id = r.project_id),
                              '{}'::jsonb) END,
           r.tags::profile_tags, r.unsubscribed, r.newest_t, now(), r.write_oldest_t, now()
      FROM ${jsonRows(sql, rows, "r", PROFILE_WRITE_COLUMNS)}
     ORDER BY r.project_id, r.key
    ON CONFLICT (project_id, key) DO UPDATE SET
      deleted_t      = greatest(p.deleted_t, excluded.deleted_t),
      created_t      = CASE WHEN least(p.created_t, excluded.created_t) IS NOT NULL
                            THEN greatest(least(p.created_t, excluded.created_t), p.deleted_t, excluded.deleted_t) END,
      last_created_t = lww_kept_t(greatest(p.last_created_t, excluded.last_created_t,
                                           CASE WHEN p.deleted_t IS NULL THEN p.created_t END),
                                  greatest(p.deleted_t, excluded.deleted_t)),
      email          = ${newestRegister(sql, "email")},
      phone_number   = ${newestRegister(sql, "phone_number")},
      unsubscribed   = ${newestRegister(sql, "unsubscribed")},
      data           = ${mergedMap(sql, "data")},
      channels       = ${mergedMap(sql, "channels")},
      topic_choices  = ${mergedMap(sql, "topic_choices")},
      tags           = ${mergedMap(sql, "tags")},
      external_id    = CASE WHEN greatest(p.deleted_t, excluded.deleted_t) IS NULL
                            THEN coalesce(p.external_id, excluded.external_id)
                            WHEN ${mergedNewestT(sql)} > greatest(p.deleted_t, excluded.deleted_t)
                            THEN coalesce(p.external_id, excluded.external_id) END,
      newest_t       = ${mergedNewestT(sql)},
      newest_t_at    = excluded.newest_t_at,
      write_oldest_t = excluded.write_oldest_t,
      updated_at     = excluded.updated_at`.catch(namingBoundPassed);
  return { applied: result.count, ignoredTopics: await unknownTopicChoices(sql, writes) };
}

/**
 * A write's failure, as ProfileTooLarge when it would take a map past its bound (its domain's
 * check, `<domain>_bytes`). Citus relays a shard's error without its constraint's name, which
 * its message still holds.
 */
function namingBoundPassed(error: unknown): never {
  if (error instanceof postgres.PostgresError && error.code === "23514") {
    const constraint = error.constraint_name ?? /check constraint "([^"]+)"/.exec(error.message)?.[1];
    const map = (Object.keys(BOUNDED_MAPS) as BoundedProfileMap[]).find(
      (name) => `${BOUNDED_MAPS[name]}_bytes` === constraint,
    );
    if (map !== undefined) throw new ProfileTooLarge(map);
  }
  throw error;
}

/** The topics a write chooses, by id. */
interface TopicChoicesRow {
  project_id: number;
  key: string;
  topic_ids: string[];
}

const TOPIC_CHOICES_COLUMNS = { project_id: "integer", key: "text", topic_ids: "jsonb" } as const;

/**
 * The topic choices of `writes` that name no topic of the profile's project, which the write
 * leaves out. Read after it, so that a choice reported here was left out (topics are never
 * deleted); only writes with topic choices, most identifies having none, cost a statement.
 */
async function unknownTopicChoices(sql: Db, writes: readonly ProfileWrite[]): Promise<ApplyResult["ignoredTopics"]> {
  const chosen = writes
    .filter((w) => Object.keys(w.state.topics).length > 0)
    .map((w): TopicChoicesRow => ({ project_id: w.projectId, key: w.key, topic_ids: Object.keys(w.state.topics) }));
  if (chosen.length === 0) return [];
  const unknown = await sql<ApplyResult["ignoredTopics"]>`
    SELECT r.project_id AS "projectId", r.key, r.topic_ids AS "topicIds"
      FROM (SELECT c.project_id, c.key,
                   ARRAY(SELECT chosen.id FROM jsonb_array_elements_text(c.topic_ids) AS chosen (id)
                          WHERE NOT EXISTS (SELECT 1 FROM topics AS t
                                             WHERE t.id = chosen.id::bigint AND t.project_id = c.project_id)) AS topic_ids
              FROM ${jsonRows(sql, chosen, "c", TOPIC_CHOICES_COLUMNS)}) AS r
     WHERE cardinality(r.topic_ids) > 0`;
  return [...unknown];
}

export interface StoredProfile {
  key: string;
  externalId: string | null;
  state: ProfileState;
  updatedAt: Date;
}

function storedProfile(row: ProfileRow): StoredProfile {
  return {
    key: row.key,
    externalId: row.external_id,
    state: {
      createdT: row.created_t,
      // A row with no erasure and a created_t is a profile (see the merge above).
      lastCreatedT: row.last_created_t ?? (row.deleted_t === null ? row.created_t : null),
      deletedT: row.deleted_t,
      email: row.email,
      phoneNumber: row.phone_number,
      data: row.data,
      channels: row.channels,
      topics: row.topic_choices,
      tags: row.tags,
      unsubscribed: row.unsubscribed,
    },
    updatedAt: row.updated_at,
  };
}

/**
 * The stored rows of these keys, whatever they hold: profiles, rows that are not profiles (yet,
 * or since an erasure) and tombstones. What a reader may see of them is libs/domain's
 * visibleProfile.
 */
export async function findProfiles(sql: Db, projectId: number, keys: readonly string[]): Promise<StoredProfile[]> {
  const rows = await sql<ProfileRow[]>`
    SELECT key, external_id, created_t::float8 AS created_t, last_created_t::float8 AS last_created_t,
           deleted_t::float8 AS deleted_t, email, phone_number, data, channels, topic_choices, tags, unsubscribed,
           updated_at
      FROM profiles
     WHERE project_id = ${projectId} AND key = ANY(${keys as string[]}::text[])
     ORDER BY key`;
  return rows.map(storedProfile);
}

/** The stored row of `key`, whatever it holds (see findProfiles). */
export async function findProfile(sql: Db, projectId: number, key: string): Promise<StoredProfile | null> {
  const [profile] = await findProfiles(sql, projectId, [key]);
  return profile ?? null;
}
