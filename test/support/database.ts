import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { connect, migrate, migrationNames, type Sql } from "@cm/db";
import { ADMIN_DATABASE_PORT, ADMIN_DATABASE_URL, uniqueName } from "./env";

export interface TestDatabase {
  url: string;
  sql: Sql;
  drop(): Promise<void>;
}

/**
 * TEST_CITUS=1 (with TEST_DATABASE_URL naming a Citus coordinator): each migrated database is
 * sharded as an operator would shard it, to run the suite on Citus (docs/scaling.md).
 */
const CITUS = process.env.TEST_CITUS === "1";
const CITUS_DISTRIBUTE = resolve(import.meta.dirname, "../../libs/db/citus/distribute.sql");

/** One node that is both coordinator and worker, holding every shard. */
async function prepareCitus(sql: Sql): Promise<void> {
  const { hostname } = new URL(ADMIN_DATABASE_URL);
  await sql`CREATE EXTENSION citus`;
  await sql`SELECT citus_set_coordinator_host(${hostname}, ${ADMIN_DATABASE_PORT})`;
  await sql`SELECT citus_set_node_property(${hostname}, ${ADMIN_DATABASE_PORT}, 'shouldhaveshards', true)`;
}

/** A new database of its own for one test file, migrated unless a test migrates it itself. */
export async function createTestDatabase(label: string, { migrated = true } = {}): Promise<TestDatabase> {
  const name = uniqueName(`cm_test_${label}`);
  const admin = connect(ADMIN_DATABASE_URL, { max: 1 });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(ADMIN_DATABASE_URL);
  url.pathname = `/${name}`;
  const sql = connect(url.toString(), { max: 8 });
  if (migrated) {
    if (CITUS) await prepareCitus(sql);
    await migrate(sql);
    if (CITUS) await sql.unsafe(await readFile(CITUS_DISTRIBUTE, "utf8"));
  }
  return {
    url: url.toString(),
    sql,
    async drop() {
      await sql.end({ timeout: 1 });
      const cleanup = connect(ADMIN_DATABASE_URL, { max: 1 });
      await cleanup.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await cleanup.end();
    },
  };
}

const MIGRATIONS = resolve(import.meta.dirname, "../../libs/db/migrations");

/**
 * A database holding the schema as it stood before `migration`, each earlier one recorded as
 * applied, as a deployment that has not taken `migration` yet has it.
 */
export async function createTestDatabaseBefore(label: string, migration: string): Promise<TestDatabase> {
  const db = await createTestDatabase(label, { migrated: false });
  await db.sql`CREATE TABLE schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`;
  for (const name of (await migrationNames()).filter((n) => n < migration)) {
    await db.sql.unsafe(await readFile(resolve(MIGRATIONS, name), "utf8"));
    await db.sql`INSERT INTO schema_migrations (name) VALUES (${name})`;
  }
  return db;
}

/**
 * The migrations not applied yet that come before `migration`, applied and recorded as
 * migrate() does: a test of an older migration checks its rows keyed as they stood before
 * migration 015 rekeyed them.
 */
export async function migrateBefore(sql: Sql, migration: string): Promise<string[]> {
  const done = new Set((await sql<{ name: string }[]>`SELECT name FROM schema_migrations`).map((row) => row.name));
  const applied = (await migrationNames()).filter((name) => name < migration && !done.has(name));
  for (const name of applied) {
    await sql.unsafe(await readFile(resolve(MIGRATIONS, name), "utf8"));
    await sql`INSERT INTO schema_migrations (name) VALUES (${name})`;
  }
  return applied;
}

/** Migration 015, which keys profiles by keyed hashes of their ids. */
export const KEYED_PROFILE_KEYS_MIGRATION = "015_profile_keys_keyed_hashes.sql";
