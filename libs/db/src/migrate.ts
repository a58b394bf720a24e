import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { MIGRATION_LOCK, takeAdvisoryLock } from "./advisory-locks";
import type { Sql, Transaction } from "./connect";

const MIGRATIONS_DIR = join(__dirname, "..", "migrations");
const FUNCTIONS_DIR = join(__dirname, "..", "functions");

export async function migrationNames(): Promise<string[]> {
  const files = await readdir(MIGRATIONS_DIR);
  return files.filter((file) => /^\d{3}_[a-z0-9_]+\.sql$/.test(file)).sort();
}

/**
 * Applies the numbered SQL files not applied yet, in order, then the SQL functions' files, all in
 * one transaction: a failing one leaves the schema as it was. Returns the migrations applied.
 *
 * A migration changes tables only. Each SQL function's current body is its file in
 * libs/db/functions (`CREATE OR REPLACE`): to change a function, edit its file (libs/db/README.md).
 * The files come after every migration, so each finds the tables it names; a test that migrates
 * "up to N" (test/support/database.ts) runs numbered files alone, and gets the bodies as they
 * stood at N.
 */
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
    await applyFunctions(tx);
  });
  return applied;
}

/**
 * Runs each function file whose text was never applied to this database, in name order, and
 * records its hash. Never applied, not merely changed: the gateway's and worker's pods migrate
 * as they start, and a pod of the previous release restarting during a rolling update would
 * otherwise put its older bodies back over the newer ones.
 */
async function applyFunctions(tx: Transaction): Promise<void> {
  await tx`CREATE TABLE IF NOT EXISTS schema_functions (
    name text NOT NULL,
    sha256 text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (name, sha256)
  )`;
  const done = new Set(
    (await tx<{ name: string; sha256: string }[]>`SELECT name, sha256 FROM schema_functions`).map(
      (r) => `${r.name} ${r.sha256}`,
    ),
  );
  const names = (await readdir(FUNCTIONS_DIR)).filter((file) => file.endsWith(".sql")).sort();
  for (const name of names) {
    const text = await readFile(join(FUNCTIONS_DIR, name), "utf8");
    const sha256 = createHash("sha256").update(text).digest("hex");
    if (done.has(`${name} ${sha256}`)) continue;
    await tx.unsafe(text);
    await tx`INSERT INTO schema_functions (name, sha256) VALUES (${name}, ${sha256})`;
  }
}
