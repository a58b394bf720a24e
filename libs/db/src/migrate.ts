import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { MIGRATION_LOCK, takeAdvisoryLock } from "./advisory-locks";
import type { Sql } from "./connect";

const MIGRATIONS_DIR = join(__dirname, "..", "migrations");

export async function migrationNames(): Promise<string[]> {
  const files = await readdir(MIGRATIONS_DIR);
  return files.filter((file) => /^\d{3}_[a-z0-9_]+\.sql$/.test(file)).sort();
}

/** Applies the numbered SQL files not applied yet, in order, all in one transaction: a failing one leaves the schema as it was. */
export async function migrate(sql: Sql): Promise<string[]> {
  const applied: string[] = [];
  await sql.begin(async (tx) => {
    await takeAdvisoryLock(tx, MIGRATION_LOCK);
    await tx`CREATE TABLE IF NOT EXISTS schema_migrations (
      name text PRIMARY KEY,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`;
    const done = new Set((await tx<{ name: string }[]>`SELECT name FROM schema_migrations`).map((r) => r.name));
    for (const name of await migrationNames()) {
      if (done.has(name)) continue;
      await tx.unsafe(await readFile(join(MIGRATIONS_DIR, name), "utf8"));
      await tx`INSERT INTO schema_migrations (name) VALUES (${name})`;
      applied.push(name);
    }
  });
  return applied;
}
