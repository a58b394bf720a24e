import type { Sql } from "@cm/db";
import { waitFor } from "./wait";

/** Waits until every one of these profile keys has a row: each acknowledged identify applied. */
export async function waitUntilApplied(sql: Sql, keys: string[], timeoutMs: number): Promise<void> {
  if (keys.length === 0) return;
  await waitFor(
    "every acknowledged identify applied",
    async () => {
      const [row] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM profiles WHERE key IN ${sql(keys)}`;
      return row?.n === keys.length ? true : undefined;
    },
    timeoutMs,
  );
}
