import type { Db } from "./connect";

export interface RecordedErasure {
  key: string;
  t: number;
}

/** A delete's erasure; only the latest of a key is kept, as it covers the earlier ones (migration 008). */
export async function recordErasure(sql: Db, projectId: number, erasure: RecordedErasure): Promise<void> {
  await sql`
    INSERT INTO profile_erasures AS e (project_id, key, t) VALUES (${projectId}, ${erasure.key}, ${erasure.t})
    ON CONFLICT (project_id, key) DO UPDATE SET t = greatest(e.t, excluded.t)`;
}

/** The erasures of these keys stamped at or after `since`. */
export async function erasuresSince(
  sql: Db,
  projectId: number,
  keys: readonly string[],
  since: number,
): Promise<RecordedErasure[]> {
  return sql<RecordedErasure[]>`
    SELECT key, t::float8 AS t
      FROM profile_erasures
     WHERE project_id = ${projectId} AND key = ANY(${keys as string[]}::text[]) AND t >= ${since}
     ORDER BY key`;
}
