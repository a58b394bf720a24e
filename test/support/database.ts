import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { connect, migrate, migrationNames, type Sql } from "@cm/db";
import { ADMIN_DATABASE_PORT, ADMIN_DATABASE_URL, REDIS_CLUSTER, uniqueName } from "./env";

export interface TestDatabase {
  url: string;
  sql: Sql;
  drop(): Promise<void>;
}

/**
 * TEST_CITUS (with TEST_DATABASE_URL naming a Citus coordinator): each migrated database is
 * sharded as an operator would shard it, to run the suite on Citus (docs/scaling.md, "The suite
 * on Citus"). `1`: one node that is both coordinator and worker. `multi`: the coordinator holds
 * no shards and the workers of TEST_CITUS_WORKERS (host:port,host:port; by default the two ports
 * after the coordinator's, as scripts/citus-cluster.sh starts them) hold them all.
 */
export const CITUS = process.env.TEST_CITUS === "1" || process.env.TEST_CITUS === "multi";
export const CITUS_MULTI_NODE = process.env.TEST_CITUS === "multi";
/**
 * The time limit of a test whose work grows with the layout: on Citus each of its steps is a
 * distributed statement, and on a multi-node cluster one over three servers sharing the
 * machine's cores (docs/scaling.md, "The suite on a multi-node Citus": 2 to 30 times slower); on
 * the test Redis Cluster (TEST_REDIS=cluster) its jobs go through three Redis servers and a
 * worker a shard on those cores (docs/operations-redis.md, "The suite on a Redis Cluster").
 */
export const layoutTimeout = (ms: number): number =>
  (CITUS_MULTI_NODE ? 10 * ms : CITUS ? 3 * ms : ms) * (REDIS_CLUSTER ? 3 : 1);
const CITUS_DISTRIBUTE = resolve(import.meta.dirname, "../../libs/db/citus/distribute.sql");

/** The workers' admin URLs (their "postgres" database), when the layout has workers of its own. */
export const CITUS_WORKER_URLS: string[] = CITUS_MULTI_NODE
  ? (
      process.env.TEST_CITUS_WORKERS ??
      [1, 2].map((n) => `${new URL(ADMIN_DATABASE_URL).hostname}:${ADMIN_DATABASE_PORT + n}`).join(",")
    )
      .split(",")
      .map((node) => {
        const url = new URL(ADMIN_DATABASE_URL);
        url.host = node.trim();
        return url.toString();
      })
  : [];

/** `run` on each worker, connected to its copy of `database`. */
async function onEachWorker(database: string, run: (worker: Sql) => Promise<unknown>): Promise<void> {
  await Promise.all(
    CITUS_WORKER_URLS.map(async (workerUrl) => {
      const url = new URL(workerUrl);
      url.pathname = `/${database}`;
      const worker = connect(url.toString(), { max: 1 });
      try {
        await run(worker);
      } finally {
        await worker.end();
      }
    }),
  );
}

/**
 * Adding a node makes Citus copy the roles to it (`worker_create_or_alter_role`), and a role is
 * a row every database of the worker shares: test files adding nodes to their databases at the
 * same time collide on it, "tuple concurrently updated" on the worker, which the coordinator
 * reports as a "failure on connection marked as essential". The loser is tried again after a pause.
 */
async function retryConcurrentUpdate<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await run();
    } catch (error) {
      if (
        attempt >= 10 ||
        !/tuple concurrently updated|failure on connection marked as essential/.test((error as Error).message)
      )
        throw error;
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt + Math.random() * 100));
    }
  }
}

/**
 * `1`: one node that is both coordinator and worker, holding every shard. `multi`: the database
 * made on every worker too, with the extension, and the workers added to the coordinator's
 * node list; the coordinator keeps no shards (Citus's default for it, said again here).
 */
async function prepareCitus(sql: Sql, name: string): Promise<void> {
  const { hostname } = new URL(ADMIN_DATABASE_URL);
  await onEachWorker(name, (worker) => worker`CREATE EXTENSION citus`);
  await sql`CREATE EXTENSION citus`;
  await retryConcurrentUpdate(() => sql`SELECT citus_set_coordinator_host(${hostname}, ${ADMIN_DATABASE_PORT})`);
  if (!CITUS_MULTI_NODE) {
    await sql`SELECT citus_set_node_property(${hostname}, ${ADMIN_DATABASE_PORT}, 'shouldhaveshards', true)`;
    return;
  }
  await sql`SELECT citus_set_node_property(${hostname}, ${ADMIN_DATABASE_PORT}, 'shouldhaveshards', false)`;
  for (const workerUrl of CITUS_WORKER_URLS) {
    const worker = new URL(workerUrl);
    await retryConcurrentUpdate(() => sql`SELECT citus_add_node(${worker.hostname}, ${Number(worker.port)})`);
  }
}

/** A new database of its own for one test file, migrated unless a test migrates it itself. */
export async function createTestDatabase(label: string, { migrated = true } = {}): Promise<TestDatabase> {
  const name = uniqueName(`cm_test_${label}`);
  const admin = connect(ADMIN_DATABASE_URL, { max: 1 });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  await admin.end();
  if (migrated) await onEachWorker("postgres", (worker) => worker.unsafe(`CREATE DATABASE ${name}`));
  const url = new URL(ADMIN_DATABASE_URL);
  url.pathname = `/${name}`;
  const sql = connect(url.toString(), { max: 8 });
  if (migrated) {
    if (CITUS) await prepareCitus(sql, name);
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
      if (migrated)
        await onEachWorker("postgres", (worker) => worker.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}

const MIGRATIONS = resolve(import.meta.dirname, "../../libs/db/migrations");

/**
 * Migrations that only create types the current workers' upsert casts to (migration 029's
 * domains of a profile's maps), applied first: a test of an older migration writes with today's
 * upsert on the schema before it, as no deployment does (migrations run before workers start).
 */
const WRITER_TYPES_MIGRATIONS = ["029_profile_map_bounds.sql"];

/**
 * A database holding the schema as it stood before `migration`, each earlier one recorded as
 * applied, as a deployment that has not taken `migration` yet has it (and the writer's types).
 */
export async function createTestDatabaseBefore(label: string, migration: string): Promise<TestDatabase> {
  const db = await createTestDatabase(label, { migrated: false });
  await db.sql`CREATE TABLE schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`;
  const names = await migrationNames();
  for (const name of [
    ...names.filter((n) => n < migration),
    ...WRITER_TYPES_MIGRATIONS.filter((n) => n >= migration),
  ]) {
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
