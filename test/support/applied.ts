import type { Sql } from "@cm/db";
import { waitFor } from "./wait";

/** Waits until every one of these profile keys has a row: each acknowledged identify applied. */
export async function waitUntilApplied(sql: Sql, keys: string[], timeoutMs: number): Promise<void> {
  if (keys.length === 0) return;
  const missing = async () => {
    const rows = await sql<{ key: string }[]>`SELECT key FROM profiles WHERE key IN ${sql(keys)}`;
    const found = new Set(rows.map((row) => row.key));
    return keys.filter((key) => !found.has(key));
  };
  await waitFor(
    "every acknowledged identify applied",
    async () => ((await missing()).length === 0 ? true : undefined),
    timeoutMs,
  ).catch(async (error: unknown) => {
    throw new Error(`${(error as Error).message}; not applied: ${JSON.stringify((await missing()).slice(0, 10))}`);
  });
}
