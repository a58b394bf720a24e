import type { Db } from "./connect";

export interface RecordedErasure {
  key: string;
  t: number;
}

/** Deletes' erasures; only the latest of a key is kept, as it covers the earlier ones (migration 008). */
export async function recordErasures(sql: Db, projectId: number, erasures: readonly RecordedErasure[]): Promise<void> {
  if (erasures.length === 0) return;
  // One row per key in a statement: ON CONFLICT cannot touch a row twice.
  const latest = new Map<string, number>();
  for (const { key, t } of erasures) latest.set(key, Math.max(t, latest.get(key) ?? t));
  const rows = [...latest].map(([key, t]) => ({ project_id: projectId, key, t }));
  await sql`
    INSERT INTO profile_erasures ${sql(rows)}
    ON CONFLICT (project_id, key) DO UPDATE SET t = greatest(profile_erasures.t, excluded.t)`;
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
