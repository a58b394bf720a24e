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
 * For the chunk transaction. Index scans only: the chunk's rows are updated in key order, the
 * order identify batches lock rows in, so the two cannot deadlock (and a misestimated range
 * cannot become a sequential scan). No JIT: the range's estimate is generic and large, and
 * compiling took about 20 ms of a 100 ms chunk. No wait for the WAL flush at commit: a chunk
 * lost in a Postgres crash loses its saved progress with it, and is simply done again.
 */
const CHUNK_SETTINGS =
  "SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL jit = off; SET LOCAL synchronous_commit = off";

/** After a chunk: `stale` when the generation is not the topic's latest default change. */
export type FanoutStep = { state: "stale" } | { state: "running" | "finished"; scanned: number; updated: number };

/**
 * Gives the next `chunkSize` profiles of the topic's project (keyset on key, after the saved
 * progress) the topic's default, skipping profiles with an explicit choice, and saves the
 * progress; one transaction, so a chunk is done exactly once whatever dies when.
 */
export async function fanOutChunk(
  sql: Sql,
  topicId: number,
  generation: number,
  chunkSize: number,
): Promise<FanoutStep> {
  return sql.begin(async (tx) => {
    await tx.unsafe(CHUNK_SETTINGS);
    // The topic lock waits for a transaction changing the topic (the one that queued this job
    // may still be open) and keeps the default from changing until this chunk commits; the
    // fan-out row is read after it, so as that transaction left it.
    const [topic] = await tx<{ project_id: number; default_status: TopicStatus }[]>`
      SELECT project_id, default_status FROM topics WHERE id = ${topicId} FOR UPDATE`;
    const [fanout] = await tx<{ generation: number; after_key: string | null; finished: boolean }[]>`
      SELECT generation, after_key, finished_at IS NOT NULL AS finished FROM topic_fanouts WHERE topic_id = ${topicId}`;
    if (topic === undefined || fanout?.generation !== generation) return { state: "stale" } as const;
    if (fanout.finished) return { state: "finished", scanned: 0, updated: 0 } as const;

    const chunk = await applyDefaultToChunk(tx, {
      projectId: topic.project_id,
      topicId,
      status: topic.default_status,
      afterKey: fanout.after_key ?? "",
      chunkSize,
    });
    const finished = chunk.scanned < chunkSize;
    await tx`
      UPDATE topic_fanouts
         SET after_key = coalesce(${chunk.lastKey}, after_key), chunks = chunks + 1,
             profiles_updated = profiles_updated + ${chunk.updated},
             finished_at = ${finished ? tx`statement_timestamp()` : null}
       WHERE topic_id = ${topicId}`;
    return { state: finished ? "finished" : "running", scanned: chunk.scanned, updated: chunk.updated } as const;
  });
}

interface ChunkOutcome {
  lastKey: string | null;
  scanned: number;
  updated: number;
}

/**
 * One statement: the chunk is the next `chunkSize` keys of the project whatever their state,
 * so its cost is bounded even when few of them need the write. A choice counts as explicit
 * when a reader sees it (written at or after the profile's creation, libs/domain
 * visibleProfile); rows that are not profiles, yet or since an erasure (libs/domain
 * profileExists, a missing last_created_t read as profiles.ts reads it), are left alone. Rows
 * that already hold the default are not rewritten, which keeps a repeated chunk cheap and
 * updated_at honest. A default is no stamped value: the row's newest_t stays true, and stays
 * trusted (profiles.ts freshWrite). The time is read once, in `bounds`: Citus refuses now() in
 * the CASE of an update of a distributed table.
 */
async function applyDefaultToChunk(
  tx: Db,
  chunk: { projectId: number; topicId: number; status: TopicStatus; afterKey: string; chunkSize: number },
): Promise<ChunkOutcome> {
  const topicKey = String(chunk.topicId);
  const [row] = await tx<ChunkOutcome[]>`
    WITH chunk AS (
      SELECT key FROM profiles
       WHERE project_id = ${chunk.projectId} AND key > ${chunk.afterKey}
       ORDER BY key
       LIMIT ${chunk.chunkSize}
    ), bounds AS (
      SELECT max(key) AS last_key, count(*)::integer AS scanned, now() AS at FROM chunk
    ), updated AS (
      UPDATE profiles AS p
         SET topic_defaults = p.topic_defaults || ${tx.json({ [topicKey]: chunk.status })}, updated_at = bounds.at,
             newest_t_at = CASE WHEN p.newest_t_at = p.updated_at THEN bounds.at END
        FROM bounds
       WHERE p.project_id = ${chunk.projectId} AND p.key > ${chunk.afterKey} AND p.key <= bounds.last_key
         AND p.created_t IS NOT NULL AND (p.last_created_t IS NOT NULL OR p.deleted_t IS NULL)
         AND NOT coalesce((p.topic_choices -> ${topicKey} ->> 't')::bigint >= p.created_t, false)
         AND p.topic_defaults ->> ${topicKey} IS DISTINCT FROM ${chunk.status}
      RETURNING 1
    )
    SELECT last_key AS "lastKey", scanned, (SELECT count(*)::integer FROM updated) AS updated FROM bounds`;
  return row as ChunkOutcome;
}
