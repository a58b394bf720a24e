import { profileKeySecrets, type Sql } from "@cm/db";
import { profileKeysWith } from "@cm/domain";
import { waitFor } from "./wait";

/** Waits until every one of these users of the project has a profile row: each acknowledged identify applied. */
export async function waitUntilApplied(sql: Sql, projectId: number, ids: string[], timeoutMs: number): Promise<void> {
  if (ids.length === 0) return;
  const keyOf = profileKeysWith(await profileKeySecrets(sql, [projectId]));
  const keys = new Map(ids.map((id) => [keyOf(projectId, id), id]));
  const missing = async () => {
    const rows = await sql<{ key: string }[]>`
      SELECT key FROM profiles WHERE project_id = ${projectId} AND key IN ${sql([...keys.keys()])}`;
    const found = new Set(rows.map((row) => row.key));
    return [...keys].filter(([key]) => !found.has(key)).map(([, id]) => id);
  };
  await waitFor(
    "every acknowledged identify applied",
    async () => ((await missing()).length === 0 ? true : undefined),
    timeoutMs,
  ).catch(async (error: unknown) => {
    throw new Error(`${(error as Error).message}; not applied: ${JSON.stringify((await missing()).slice(0, 10))}`);
  });
}
