import { profileKeySecrets, type Sql } from "@cm/db";
import { profileKeysWith } from "@cm/domain";
import { CITUS, CITUS_MULTI_NODE } from "./database";

/** The ids of seeded profiles: u0000001, u0000002, … */
export function seededId(n: number): string {
  return `u${String(n).padStart(7, "0")}`;
}

export interface SeededProfiles {
  /** The ids in the order of their stored keys: the order a fan-out walks them in. */
  inKeyOrder: string[];
  /** The stored key of a user of the project. */
  keyOf(id: string): string;
}

/**
 * Profiles 1..count of a project in one statement; every `explicitEvery`-th has an explicit
 * choice for `topicId` (visible: written at the profile's creation).
 */
export async function seedProfiles(
  sql: Sql,
  projectId: number,
  count: number,
  explicit: { topicId: number; status: "subscribed" | "unsubscribed"; every: number } | null = null,
): Promise<SeededProfiles> {
  const projectKeyOf = profileKeysWith(await profileKeySecrets(sql, [projectId]));
  const keyOf = (id: string) => projectKeyOf(projectId, id);
  const ids = Array.from({ length: count }, (_, n) => seededId(n + 1));
  const keys = ids.map(keyOf);
  const topicKey = explicit === null ? "" : String(explicit.topicId);
  await sql`
    INSERT INTO profiles (project_id, key, external_id, created_t, topic_choices)
    SELECT ${projectId}, key, id, 1000,
           CASE WHEN ${explicit !== null} AND g % ${explicit?.every ?? 1} = 0
                THEN jsonb_build_object(${topicKey}::text, jsonb_build_object('t', 1000, 'h', 'seed', 'v', ${explicit?.status ?? ""}::text))
                ELSE '{}' END
      FROM unnest(${ids}::text[], ${keys}::text[]) WITH ORDINALITY AS s(id, key, g)`;
  // Ordered as the fan-out orders them: by the database's collation.
  const inKeyOrder = await sql<{ external_id: string }[]>`
    SELECT external_id FROM profiles WHERE project_id = ${projectId} ORDER BY key`;
  return { inKeyOrder: inKeyOrder.map((row) => row.external_id), keyOf };
}

export interface FanoutRow {
  generation: number;
  after_key: string | null;
  chunks: number;
  profiles_updated: number;
  finished: boolean;
}

export async function fanoutOf(sql: Sql, topicId: number): Promise<FanoutRow | undefined> {
  const [row] = await sql<FanoutRow[]>`
    SELECT generation, after_key, chunks, profiles_updated::integer AS profiles_updated, finished_at IS NOT NULL AS finished
      FROM topic_fanouts WHERE topic_id = ${topicId}`;
  return row;
}

/** How the project's profiles hold the topic: materialised default by value, and explicit choices. */
export async function materialised(sql: Sql, projectId: number, topicId: number) {
  const topicKey = String(topicId);
  const [row] = await sql<{ subscribed: number; unsubscribed: number; absent: number; explicitWithDefault: number }[]>`
    SELECT count(*) FILTER (WHERE NOT topic_choices ? ${topicKey} AND topic_defaults ->> ${topicKey} = 'subscribed')::integer AS subscribed,
           count(*) FILTER (WHERE NOT topic_choices ? ${topicKey} AND topic_defaults ->> ${topicKey} = 'unsubscribed')::integer AS unsubscribed,
           count(*) FILTER (WHERE NOT topic_choices ? ${topicKey} AND NOT topic_defaults ? ${topicKey})::integer AS absent,
           count(*) FILTER (WHERE topic_choices ? ${topicKey} AND topic_defaults ? ${topicKey})::integer AS "explicitWithDefault"
      FROM profiles WHERE project_id = ${projectId}`;
  return row as { subscribed: number; unsubscribed: number; absent: number; explicitWithDefault: number };
}

/**
 * Holds a row lock on one profile, so that the fan-out chunk holding it waits: a test can act
 * while a fan-out is mid-way. Returns the release.
 */
export async function lockProfile(sql: Sql, projectId: number, key: string): Promise<() => Promise<void>> {
  const reserved = await sql.reserve();
  await reserved`BEGIN`;
  await reserved`SELECT 1 FROM profiles WHERE project_id = ${projectId} AND key = ${key} FOR UPDATE`;
  return async () => {
    await reserved`ROLLBACK`;
    reserved.release();
  };
}

/**
 * The group a fan-out chunk updates each key in, in a transaction of its own (libs/db
 * topic-fanout.ts): its shard on Citus, the whole chunk on one Postgres.
 */
export async function fanoutGroups(sql: Sql, keys: string[]): Promise<string[]> {
  if (!CITUS) return keys.map(() => "chunk");
  const rows = await sql<{ shard: string }[]>`
    SELECT get_shard_id_for_distribution_column('profiles', key)::text AS shard
      FROM unnest(${keys}::text[]) WITH ORDINALITY AS k(key, n) ORDER BY n`;
  return rows.map((row) => row.shard);
}

/**
 * Backends of this database waiting for a lock: the fan-out reached the locked profile. On a
 * multi-node Citus the wait is on the worker holding the profile's shard, in a backend of its
 * copy of the database: citus_stat_activity shows every node's.
 */
export async function lockWaiters(sql: Sql): Promise<number> {
  const activity = sql(CITUS_MULTI_NODE ? "citus_stat_activity" : "pg_stat_activity");
  const [row] = await sql<{ waiting: number }[]>`
    SELECT count(*)::integer AS waiting FROM ${activity}
     WHERE datname = current_database() AND wait_event_type = 'Lock'`;
  return (row as { waiting: number }).waiting;
}
