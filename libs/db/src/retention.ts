import type { Db } from "./connect";

/** How many dead letters were recorded before `before` and are still waiting for a replay or a discard. */
export async function deadLettersBefore(sql: Db, before: Date): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    SELECT count(*)::integer AS n FROM identify_dead_letters WHERE created_at < ${before}`;
  return row?.n ?? 0;
}

/** Keys examined per statement of the walk below: one short transaction each. */
const WALK_CHUNK = 5_000;

/**
 * Removes the rows that never became profiles (only update_only updates, for users who do not
 * exist) and were last written before `before`. profiles has no index to find them by (an
 * index on their columns would make every profile update write an index entry), so this walks
 * the table in key order, a chunk per statement. A row that became a profile meanwhile is
 * kept: the delete checks the row as it is when it deletes it. A row holding an erasure (a
 * tombstone) is never removed: without it, an operation stamped before the erasure and arriving
 * later would bring the erased data back. Nor is the row of an id a reidentify linked: what is
 * sent to the new id after `reidentify a→b` lands in b's row, which no identify created, yet
 * is part of a's profile (the read merges the rows of linked ids).
 *
 * Shaped for Citus, which shards profiles by key and profile_links by from_key: the links from
 * a key are checked beside its row (the same shard), while the links to the chunk's hidden keys
 * are looked up once, in `linked_to` (every shard), because Citus refuses a subquery on to_key
 * inside the delete. Materialised and read as a hashed set (`NOT IN`; no column is null): an
 * inlined `linked_to` made Postgres join it again for every row, seconds per chunk. A link
 * recorded between that lookup and the delete needs no lock (docs/scaling.md, "The retention
 * walk on Citus").
 */
export async function pruneHiddenProfiles(sql: Db, before: Date): Promise<number> {
  let deleted = 0;
  let after: { projectId: number; key: string } = { projectId: -1, key: "" };
  for (;;) {
    const [chunk] = await sql<{ deleted: number; last_project: number | null; last_key: string | null }[]>`
      WITH chunk AS (
        SELECT project_id, key, created_t, deleted_t, updated_at
          FROM profiles
         WHERE (project_id, key) > (${after.projectId}, ${after.key})
         ORDER BY project_id, key
         LIMIT ${WALK_CHUNK}
      ), hidden AS (
        SELECT project_id, key FROM chunk
         WHERE created_t IS NULL AND deleted_t IS NULL AND updated_at < ${before}
      ), linked_to AS MATERIALIZED (
        SELECT l.project_id, l.to_key AS key
          FROM profile_links AS l JOIN hidden AS h ON l.project_id = h.project_id AND l.to_key = h.key
      ), gone AS (
        DELETE FROM profiles AS p
         USING hidden AS h
         WHERE p.project_id = h.project_id AND p.key = h.key
           AND p.created_t IS NULL AND p.deleted_t IS NULL AND p.updated_at < ${before}
           AND NOT EXISTS (SELECT 1 FROM profile_links AS l WHERE l.project_id = p.project_id AND l.from_key = p.key)
           AND (h.project_id, h.key) NOT IN (SELECT project_id, key FROM linked_to)
        RETURNING 1
      ), last AS (
        SELECT project_id, key FROM chunk ORDER BY project_id DESC, key DESC LIMIT 1
      )
      SELECT (SELECT count(*) FROM gone)::integer AS deleted,
             (SELECT project_id FROM last) AS last_project,
             (SELECT key FROM last) AS last_key`;
    deleted += chunk?.deleted ?? 0;
    if (chunk?.last_project === null || chunk?.last_project === undefined || chunk.last_key === null) return deleted;
    after = { projectId: chunk.last_project, key: chunk.last_key };
  }
}
