import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrationNames } from "@cm/db";
import { createTestDatabase, type TestDatabase } from "../support/database";

/**
 * The schema stays ready to be sharded with Citus (docs/scaling.md, "Past one Postgres"): what
 * grows with the profiles is distributed by the profile it belongs to, what every shard needs is
 * a reference table, and nothing else may hold a constraint a sharded table cannot keep. A new
 * table has to be placed in one of these lists, so that the choice is made when it is added.
 */
const DISTRIBUTED: Record<string, { profileKey: string }> = {
  profiles: { profileKey: "key" },
  profile_links: { profileKey: "from_key" },
  profile_erasures: { profileKey: "key" },
  events: { profileKey: "user_key" },
  // Not a profile's: a deduplication key (a hash that names a user or an idempotency key).
  event_keys: { profileKey: "key" },
  // Written by the triggers of profiles and events, which may write their own node's shards only
  // (docs/scaling.md, "The change feed on Citus").
  changes: { profileKey: "user_key" },
};
/**
 * Distributed tables partitioned by time as well (Citus keeps time partitions of a distributed
 * table): their unique indexes hold the partition key beside the distribution column.
 */
const TIME_PARTITIONED: Record<string, string[]> = { events: ["created_at"] };
/** Small, read by every shard, written rarely: copied to every node. */
const REFERENCE = [
  "projects",
  "credentials",
  "topics",
  "topic_fanouts",
  "journeys",
  "journey_audiences",
  "journey_nodes",
  "journey_edges",
  "messages",
  "message_contents",
  "message_content_bodies",
  "journey_documents",
  // The change feed's: a row a project, and the epoch its capture reads on every node.
  "change_trims",
  "change_epochs",
];
/**
 * Kept on the coordinator only: operators' records, not data a request reads (webhook endpoints,
 * which only workers read; Citus keeps them as a local table of its own, for their foreign key to
 * projects), and the change feed's samples of the nodes, which only the coordinator reads.
 */
const COORDINATOR_ONLY = [
  "schema_migrations",
  "schema_functions",
  "identify_dead_letters",
  "webhook_endpoints",
  "change_epoch_samples",
];

/** The first migration after which the rules hold; every later one must keep them. */
const FIRST_READY = "008_profile_lifecycle.sql";
const MIGRATIONS = resolve(import.meta.dirname, "../../libs/db/migrations");

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase("citus_ready", { migrated: false });
  await db.sql`CREATE TABLE schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`;
  await db.sql`CREATE TABLE schema_functions (name text NOT NULL, sha256 text NOT NULL,
                                              applied_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (name, sha256))`;
});
afterAll(() => db.drop());

interface Table {
  name: string;
  notNull: string[];
  uniques: { name: string; columns: string[] }[];
  foreignKeys: { name: string; references: string }[];
  partitionColumns: string[];
}

/** The schema's top-level tables (partitions are their parent's), with what the rules look at. */
async function tables(): Promise<Table[]> {
  return db.sql<Table[]>`
    SELECT c.relname AS name,
           ARRAY(SELECT a.attname::text FROM pg_attribute AS a
                  WHERE a.attrelid = c.oid AND a.attnum > 0 AND a.attnotnull AND NOT a.attisdropped) AS "notNull",
           coalesce((SELECT json_agg(json_build_object(
                              'name', i.indexrelid::regclass::text,
                              'columns', ARRAY(SELECT a.attname FROM unnest(i.indkey) AS k
                                                JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum = k)))
                       FROM pg_index AS i WHERE i.indrelid = c.oid AND (i.indisunique OR i.indisexclusion)), '[]') AS uniques,
           coalesce((SELECT json_agg(json_build_object('name', f.conname, 'references', f.confrelid::regclass::text))
                       FROM pg_constraint AS f WHERE f.conrelid = c.oid AND f.contype = 'f'), '[]') AS "foreignKeys",
           ARRAY(SELECT a.attname::text FROM pg_partitioned_table AS p, unnest(p.partattrs) AS k
                   JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum = k
                  WHERE p.partrelid = c.oid) AS "partitionColumns"
      FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
     ORDER BY 1`;
}

/**
 * What a sharded deployment could not keep, in words; empty when the schema is ready. `complete`:
 * the schema of the last migration, which must have every table listed (an earlier one lacks
 * those added later).
 */
function violations(schema: Table[], complete = true): string[] {
  const found: string[] = [];
  const placed = new Set([...Object.keys(DISTRIBUTED), ...REFERENCE, ...COORDINATOR_ONLY]);
  for (const table of schema) {
    if (!placed.has(table.name)) found.push(`${table.name} is neither distributed, reference nor coordinator-only`);
    const distributed = DISTRIBUTED[table.name];
    if (distributed !== undefined) {
      const by = ["project_id", distributed.profileKey];
      for (const column of by)
        if (!table.notNull.includes(column)) found.push(`${table.name}.${column} must be NOT NULL`);
      for (const unique of table.uniques)
        if (!by.every((column) => unique.columns.includes(column)))
          found.push(`${unique.name} on ${table.name} is unique without ${by.join(" and ")}`);
      for (const foreignKey of table.foreignKeys)
        if (!REFERENCE.includes(foreignKey.references))
          found.push(`${table.name} references ${foreignKey.references}, which is not a reference table`);
      const partitionedBy = [...by, ...(TIME_PARTITIONED[table.name] ?? [])];
      if (
        table.partitionColumns.length > 0 &&
        !table.partitionColumns.every((column) => partitionedBy.includes(column))
      )
        found.push(`${table.name} is partitioned by ${table.partitionColumns.join(", ")}, not by its profile`);
    }
    if (REFERENCE.includes(table.name))
      for (const foreignKey of table.foreignKeys)
        if (!REFERENCE.includes(foreignKey.references))
          found.push(`reference table ${table.name} references ${foreignKey.references}`);
  }
  if (complete)
    for (const name of placed)
      if (!schema.some((table) => table.name === name)) found.push(`${name} is listed but does not exist`);
  return found;
}

/** The tables libs/db/citus/distribute.sql makes reference tables, and those it distributes, by which column. */
async function distributeScript(): Promise<{
  reference: string[];
  distributed: Record<string, { profileKey: string }>;
}> {
  const script = await readFile(resolve(import.meta.dirname, "../../libs/db/citus/distribute.sql"), "utf8");
  const array = /create_reference_table\(t\) FROM unnest\(ARRAY\[([^\]]*)\]\)/.exec(script)?.[1] ?? "";
  const reference = [...array.matchAll(/'([a-z_]+)'/g)].map((m) => m[1] as string);
  const distributed = Object.fromEntries(
    [...script.matchAll(/create_distributed_table\('([a-z_]+)', '([a-z_]+)'/g)].map((m) => [
      m[1],
      { profileKey: m[2] },
    ]),
  );
  return { reference, distributed };
}

describe("the schema stays ready for Citus", () => {
  it("is sharded by libs/db/citus/distribute.sql exactly as placed here", async () => {
    const { reference, distributed } = await distributeScript();
    expect(reference.sort()).toEqual([...REFERENCE].sort());
    expect(distributed).toEqual(DISTRIBUTED);
  });

  it("keeps the rules after every migration from the one that made it ready", async () => {
    const names = await migrationNames();
    expect(names).toContain(FIRST_READY);
    for (const name of names) {
      await db.sql.unsafe(await readFile(resolve(MIGRATIONS, name), "utf8"));
      if (name < FIRST_READY) continue;
      const last = name === names[names.length - 1];
      expect({ after: name, violations: violations(await tables(), last) }).toEqual({ after: name, violations: [] });
    }
  });

  it("finds what would break the rules", async () => {
    const schema = await tables();
    const table = (name: string) => schema.find((t) => t.name === name)!;
    const broken: Table[] = [
      ...schema.filter((t) => !["profiles", "profile_erasures", "topics"].includes(t.name)),
      {
        ...table("profiles"),
        uniques: [...table("profiles").uniques, { name: "profiles_email_idx", columns: ["project_id", "email"] }],
        foreignKeys: [{ name: "profiles_link_fkey", references: "profile_links" }],
      },
      { ...table("profile_erasures"), notNull: ["project_id"], partitionColumns: ["project_id", "t"] },
      { ...table("topics"), foreignKeys: [{ name: "topics_profile_fkey", references: "profiles" }] },
      { name: "profile_events", notNull: [], uniques: [], foreignKeys: [], partitionColumns: [] },
    ];
    expect(violations(broken).sort()).toEqual([
      "profile_erasures is partitioned by project_id, t, not by its profile",
      "profile_erasures.key must be NOT NULL",
      "profile_events is neither distributed, reference nor coordinator-only",
      "profiles references profile_links, which is not a reference table",
      "profiles_email_idx on profiles is unique without project_id and key",
      "reference table topics references profiles",
    ]);
  });
});
