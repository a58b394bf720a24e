import { readdir, readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { migrate } from "@cm/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database";

// Each SQL function's current body is its file in libs/db/functions, applied by migrate() after
// the numbered migrations (libs/db/README.md). A function whose body its file writes out from
// other functions' text (changes_of_profiles, in change_feed.sql, so that PL/pgSQL keeps its
// statements' plans) is in its file by name, in the `EXECUTE format(` that creates it.

const FUNCTIONS = resolve(import.meta.dirname, "../../libs/db/functions");
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase("sql_functions");
});
afterAll(() => db.drop());

async function functionFiles(): Promise<string[]> {
  const names = (await readdir(FUNCTIONS)).filter((name) => name.endsWith(".sql"));
  return Promise.all(names.map((name) => readFile(resolve(FUNCTIONS, name), "utf8")));
}

async function body(signature: string): Promise<string> {
  const [row] = await db.sql<
    { body: string }[]
  >`SELECT prosrc AS body FROM pg_proc WHERE oid = ${signature}::regprocedure`;
  return (row as { body: string }).body;
}

describe("SQL functions", () => {
  it("holds every function of the schema, as its file has it, in one file", async () => {
    const files = await functionFiles();
    const functions = await db.sql<{ signature: string; body: string }[]>`
      SELECT oid::regprocedure::text AS signature, prosrc AS body
        FROM pg_proc WHERE pronamespace = 'public'::regnamespace ORDER BY 1`;
    expect(functions.length).toBeGreaterThan(0);
    const writesOut = (text: string, signature: string) =>
      /EXECUTE format\(\$f\$\s*CREATE OR REPLACE FUNCTION (\S+)/.exec(text)?.[1] === signature;
    for (const { signature, body } of functions) {
      const holding = files.filter((text) => text.includes(`$$${body}$$`) || writesOut(text, signature));
      expect({ signature, files: holding.length }).toEqual({ signature, files: 1 });
    }
  });

  it("applies a file's text once: an older release migrating again leaves the body it finds", async () => {
    const signature = "lww_after(bigint,bigint)";
    const current = await body(signature);
    // What a newer release's file made of it.
    await db.sql`CREATE OR REPLACE FUNCTION lww_after(t bigint, erased_until bigint) RETURNS boolean
                 LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT erased_until IS NULL OR t >= erased_until $$`;
    expect(await migrate(db.sql)).toEqual([]);
    expect(await body(signature)).not.toBe(current);

    await db.sql`DELETE FROM schema_functions WHERE name = 'lww.sql'`;
    expect(await migrate(db.sql)).toEqual([]);
    expect(await body(signature)).toBe(current);
    expect((await db.sql`SELECT name FROM schema_functions WHERE name = 'lww.sql'`).length).toBe(1);
  });
});
