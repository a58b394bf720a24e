import type { TopicStatus } from "@cm/domain";
import type { Db, Sql } from "./connect";

/**
 * Starts the fan-out of a topic's new default and returns its generation; any earlier fan-out
 * of the topic is superseded and its progress dropped. Call it in the transaction that changes
 * the default, after lockTopic.
 */
export async function startTopicFanout(tx: Db, topicId: number): Promise<number> {
  const [row] = await tx<{ generation: number }[]>`
    INSERT INTO topic_fanouts (topic_id, generation, started_at) VALUES (${topicId}, 1, statement_timestamp())
    ON CONFLICT (topic_id) DO UPDATE SET
      generation = topic_fanouts.generation + 1, after_key = NULL, chunks = 0, profiles_updated = 0,
      started_at = excluded.started_at, finished_at = NULL
    RETURNING generation`;
  return (row as { generation: number }).generation;
}

/**
 * For each transaction of a chunk. Index scans only: a group's rows are updated in key order,
 * the order identify batches lock rows in, so the two cannot deadlock (docs/scaling.md, "The
 * fan-out's locks on a distributed table"; and a misestimated range cannot become a sequential
 * scan). On Citus the shards are updated on the workers, which take the settings only when told
 * to propagate them (a mere placeholder setting on plain Postgres). No JIT: the range's estimate
 * is generic and large, and compiling took about 20 ms of a 100 ms chunk. No wait for the WAL
 * flush at commit: a group lost in a Postgres crash loses its saved progress with it, and is
 * simply done again.
 */
const CHUNK_SETTINGS =
  "SET LOCAL citus.propagate_set_commands = 'local'; SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL jit = off; SET LOCAL synchronous_commit = off";

/** After a chunk: `stale` when the generation is not the topic's latest default change. */
export type FanoutStep = { state: "stale" } | { state: "running" | "finished"; scanned: number; updated: number };

/**
 * The next `chunkSize` profiles of a project after `afterKey`, in groups that are each updated
 * in a transaction of their own: on Citus the keys of each shard (a group's update is then a
 * statement on one shard, and holds its rows' locks only until it commits), on one Postgres the
 * whole chunk (`keys` null: the range up to `lastKey`).
 */
interface Chunk {
  afterKey: string | null;
  lastKey: string | null;
  scanned: number;
  groups: (string[] | null)[];
}

/**
 * Gives the next `chunkSize` profiles of the topic's project (keyset on key, after the saved
 * progress) the topic's default, skipping profiles with an explicit choice, and saves the
 * progress. Group by group (Chunk), each in a transaction that holds the topic, so that its
 * default cannot change meanwhile, and adds its count to the progress; the last one moves the
 * position on. Whatever dies when, the chunk is done again from its start, where the groups
 * already done find nothing left to update: every profile is given the default and counted once.
 */
export async function fanOutChunk(
  sql: Sql,
  topicId: number,
  generation: number,
  chunkSize: number,
): Promise<FanoutStep> {
  let chunk: Chunk | undefined;
  let updated = 0;
  for (let group = 0; ; group += 1) {
    const step = await sql.begin(async (tx) => {
      await tx.unsafe(CHUNK_SETTINGS);
      // The topic lock waits for a transaction changing the topic (the one that queued this job
      // may still be open) and keeps the default from changing until this group commits; the
      // fan-out row is read after it, so as that transaction left it.
      const [topic] = await tx<{ project_id: number; default_status: TopicStatus; now: string }[]>`
        SELECT project_id, default_status, now()::text FROM topics WHERE id = ${topicId} FOR UPDATE`;
      const [fanout] = await tx<{ generation: number; after_key: string | null; finished: boolean }[]>`
        SELECT generation, after_key, finished_at IS NOT NULL AS finished FROM topic_fanouts WHERE topic_id = ${topicId}`;
      if (topic === undefined || fanout?.generation !== generation) return "stale";
      // Finished, or moved on since the chunk was read by another run of the job (one taken for stalled).
      if (fanout.finished || (chunk !== undefined && fanout.after_key !== chunk.afterKey)) return "passed";
      const read = chunk ?? (await readChunk(tx, topic.project_id, fanout.after_key, chunkSize));
      const count = await applyDefaultToGroup(tx, {
        projectId: topic.project_id,
        topicId,
        status: topic.default_status,
        at: topic.now,
        chunk: read,
        keys: read.groups[group] ?? null,
      });
      const last = group === read.groups.length - 1;
      await tx`
        UPDATE topic_fanouts
           SET profiles_updated = profiles_updated + ${count}
               ${last ? tx`, after_key = coalesce(${read.lastKey}, after_key), chunks = chunks + 1` : tx``}
               ${last && read.scanned < chunkSize ? tx`, finished_at = statement_timestamp()` : tx``}
         WHERE topic_id = ${topicId}`;
      return { chunk: read, count };
    });
    if (step === "stale") return { state: "stale" };
    if (step === "passed") return { state: chunk === undefined ? "finished" : "running", scanned: 0, updated };
    chunk = step.chunk;
    updated += step.count;
    if (group === chunk.groups.length - 1) {
      return { state: chunk.scanned < chunkSize ? "finished" : "running", scanned: chunk.scanned, updated };
    }
  }
}

/**
 * The chunk after `afterKey`, read without locking a row. On Citus its keys are grouped by the
 * shard that holds them; elsewhere the chunk is one group, and only its bounds are read.
 */
async function readChunk(tx: Db, projectId: number, afterKey: string | null, chunkSize: number): Promise<Chunk> {
  const [citus] = await tx<{ sharded: boolean }[]>`
    SELECT to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL AS sharded`;
  const sharded =
    citus?.sharded === true &&
    (await tx`SELECT FROM pg_dist_partition WHERE logicalrelid = 'profiles'::regclass`).length > 0;
  const groups = await tx<{ keys: string[] | null; last_key: string | null; scanned: number }[]>`
    SELECT ${sharded ? tx`array_agg(key ORDER BY key)` : tx`NULL::text[]`} AS keys,
           max(max(key)) OVER () AS last_key, (sum(count(*)) OVER ())::integer AS scanned
      FROM (SELECT key FROM profiles
             WHERE project_id = ${projectId} AND key > ${afterKey ?? ""}
             ORDER BY key
             LIMIT ${chunkSize}) AS chunk
     GROUP BY ${sharded ? tx`get_shard_id_for_distribution_column('profiles', key)` : tx`()`}`;
  const [first] = groups;
  return {
    afterKey,
    lastKey: first?.last_key ?? null,
    scanned: first?.scanned ?? 0,
    groups: groups.length > 0 ? groups.map((group) => group.keys) : [null],
  };
}

/**
 * One statement: the group's profiles, whatever their state, so that its cost is bounded even
 * when few of them need the write. A choice counts as explicit when a reader sees it (written
 * at or after the profile's creation, libs/domain visibleProfile); rows that are not profiles,
 * yet or since an erasure (libs/domain profileExists, a missing last_created_t read as
 * profiles.ts reads it), are left alone. Each condition is checked on the row as it is when it
 * is locked, so a choice written while the chunk runs is never overwritten. Rows that already
 * hold the default are not rewritten, which keeps a repeated chunk cheap and updated_at honest.
 * A default is no stamped value: the row's newest_t stays true, and stays trusted (profiles.ts
 * freshWrite). The time is the transaction's, read with the topic (as text: a Date would drop
 * its microseconds): Citus refuses now() in the CASE of an update of a distributed table.
 */
async function applyDefaultToGroup(
  tx: Db,
  group: { projectId: number; topicId: number; status: TopicStatus; at: string; chunk: Chunk; keys: string[] | null },
): Promise<number> {
  const topicKey = String(group.topicId);
  const inGroup =
    group.keys === null
      ? tx`p.key > ${group.chunk.afterKey ?? ""} AND p.key <= ${group.chunk.lastKey}`
      : tx`p.key = ANY(${group.keys})`;
  const at = tx`${group.at}::timestamptz`;
  const { count } = await tx`
    UPDATE profiles AS p
       SET topic_defaults = p.topic_defaults || ${tx.json({ [topicKey]: group.status })}, updated_at = ${at},
           newest_t_at = CASE WHEN p.newest_t_at = p.updated_at THEN ${at} END
     WHERE p.project_id = ${group.projectId} AND ${inGroup}
       AND p.created_t IS NOT NULL AND (p.last_created_t IS NOT NULL OR p.deleted_t IS NULL)
       AND NOT coalesce((p.topic_choices -> ${topicKey} ->> 't')::bigint >= p.created_t, false)
       AND p.topic_defaults ->> ${topicKey} IS DISTINCT FROM ${group.status}`;
  return count;
}
