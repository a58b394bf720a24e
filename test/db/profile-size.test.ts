import { createProject, type Sql } from "@cm/db";
import { applyProfileOperations } from "@cm/app";
import { PROFILE_MAP_BYTES, ProfileTooLarge } from "@cm/domain";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { uniqueName } from "../support/env";
import { profileOperations, readProfileOrNull, storedKeyOf } from "../support/profile-operations";
import { testProfileStores } from "../support/profile-stores";

// docs/profiles.md "Limits": what a profile row's data, tags and channels may hold (migration
// 029, libs/domain PROFILE_MAP_BYTES), and what becomes of an operation that would pass it.

let db: TestDatabase;
let sql: Sql;
let stores: ReturnType<typeof testProfileStores>;
beforeAll(async () => {
  db = await createTestDatabase("profile_size");
  sql = db.sql;
  stores = testProfileStores(sql, uniqueName("profile_size"));
});
afterAll(async () => {
  await stores.close();
  await db.drop();
});

async function newProject() {
  const { id } = await createProject(sql, "sizes");
  return { id, ...profileOperations(id) };
}

/** A stored map's size as its bound measures it: jsonb before compression (`|| '{}'` takes the stored value out of its compression). */
async function storedBytes(projectId: number, id: string, map: "data" | "tags") {
  const key = await storedKeyOf(sql, projectId, id);
  const [row] = await sql<{ bytes: number }[]>`
    SELECT pg_column_size(${sql(map)} || '{}') AS bytes FROM profiles WHERE project_id = ${projectId} AND key = ${key}`;
  return (row as { bytes: number }).bytes;
}

const refusals = (outcome: Awaited<ReturnType<typeof applyProfileOperations>>) =>
  outcome.poisoned.map(({ operation, error }) => ({
    id: operation.id,
    map: error instanceof ProfileTooLarge ? error.map : String(error),
  }));

const VALUE = 250_000;

describe("a profile's data", () => {
  it("takes writes up to PROFILE_MAP_BYTES and refuses, alone, the one that would pass it", async () => {
    const p = await newProject();
    for (const k of [1, 2, 3, 4]) {
      const outcome = await applyProfileOperations(stores, [
        p.identify("grown", 1000 + k, { data: { [`k${k}`]: "x".repeat(VALUE) } }),
      ]);
      expect(outcome.poisoned).toEqual([]);
    }
    expect(await storedBytes(p.id, "grown", "data")).toBeLessThanOrEqual(PROFILE_MAP_BYTES.data);
    // The fifth of 250 KB would pass 1 MiB: refused, and the other operations of its job applied.
    const outcome = await applyProfileOperations(stores, [
      p.identify("grown", 1005, { data: { k5: "x".repeat(VALUE) } }),
      p.identify("other", 1005, { data: { plan: "pro" } }),
      p.tags("grown", 1005, ["vip"]),
    ]);
    expect(refusals(outcome)).toEqual([{ id: "grown", map: "data" }]);
    expect(outcome.poisoned[0]?.error).toBeInstanceOf(ProfileTooLarge);
    expect((outcome.poisoned[0]?.error as Error).message).toMatch(/the profile's data would hold more than 1024 KiB/);
    const grown = await readProfileOrNull(sql, p.id, "grown");
    expect(Object.keys(grown?.data ?? {}).sort()).toEqual(["k1", "k2", "k3", "k4"]);
    expect(grown?.tags).toEqual(["vip"]);
    expect((await readProfileOrNull(sql, p.id, "other"))?.data).toEqual({ plan: "pro" });
    // A profile at its bound still takes a value no bigger than the one it replaces, and a cleared key.
    const replaced = await applyProfileOperations(stores, [
      p.identify("grown", 1006, { data: { k1: "y".repeat(VALUE) } }),
      p.edit("grown", 1006, { k2: null }),
    ]);
    expect(replaced.poisoned).toEqual([]);
    const data = (await readProfileOrNull(sql, p.id, "grown"))?.data ?? {};
    expect(Object.keys(data).sort()).toEqual(["k1", "k3", "k4"]);
    expect(data.k1 === "y".repeat(VALUE)).toBe(true);
  });

  it("holds exactly PROFILE_MAP_BYTES, not a byte more, whether the row is new or merged", async () => {
    const p = await newProject();
    // One key whose value is n characters long (past 64, where it gets a hash to break ties) takes n bytes and a constant.
    await applyProfileOperations(stores, [p.identify("probe", 1000, { data: { k: "z".repeat(1000) } })]);
    const fits = PROFILE_MAP_BYTES.data - ((await storedBytes(p.id, "probe", "data")) - 1000);
    const write = (id: string, t: number, n: number) =>
      applyProfileOperations(stores, [p.identify(id, t, { data: { k: "z".repeat(n) } })]);
    expect(refusals(await write("exact", 1000, fits))).toEqual([]);
    expect(await storedBytes(p.id, "exact", "data")).toBe(PROFILE_MAP_BYTES.data);
    expect(refusals(await write("over", 1000, fits + 1))).toEqual([{ id: "over", map: "data" }]);
    expect(await readProfileOrNull(sql, p.id, "over")).toBeNull();
    expect(refusals(await write("probe", 1001, fits + 1))).toEqual([{ id: "probe", map: "data" }]);
    expect(refusals(await write("probe", 1001, fits))).toEqual([]);
  });

  it("refuses, within one job, the writes that would take the profile past its bound and applies the others", async () => {
    const p = await newProject();
    const outcome = await applyProfileOperations(
      stores,
      [1, 2, 3, 4, 5, 6].map((k) => p.identify("batched", 1000 + k, { data: { [`k${k}`]: "x".repeat(VALUE) } })),
    );
    expect(outcome.applied).toBe(4);
    expect(refusals(outcome)).toEqual([
      { id: "batched", map: "data" },
      { id: "batched", map: "data" },
    ]);
    expect(Object.keys((await readProfileOrNull(sql, p.id, "batched"))?.data ?? {})).toHaveLength(4);
  });
});

describe("a profile's tags", () => {
  it("refuses the tags edit that would take them past PROFILE_MAP_BYTES", async () => {
    const p = await newProject();
    const hundredTags = (round: number) => Array.from({ length: 100 }, (_, i) => `${round}-${i}-`.padEnd(255, "t"));
    const refused = [];
    for (let round = 0; round < 12; round += 1) {
      refused.push(
        ...refusals(await applyProfileOperations(stores, [p.tags("tagged", 1000 + round, hundredTags(round))])),
      );
    }
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every(({ map }) => map === "tags")).toBe(true);
    expect(await storedBytes(p.id, "tagged", "tags")).toBeLessThanOrEqual(PROFILE_MAP_BYTES.tags);
  });
});

describe("a row past its bound, written before migration 029", () => {
  it("takes every write that leaves the map alone, and its erasure, and refuses one that grows it", async () => {
    const p = await newProject();
    await applyProfileOperations(stores, [p.identify("legacy", 1000, { data: { plan: "free" } })]);
    const key = await storedKeyOf(sql, p.id, "legacy");
    await sql`
      UPDATE profiles SET data = data || jsonb_build_object('blob', jsonb_build_object('t', 1000, 'v', repeat('x', 2000000)))
       WHERE project_id = ${p.id} AND key = ${key}`;
    const outcome = await applyProfileOperations(stores, [
      p.subscription("legacy", 2000, true),
      p.tags("legacy", 2000, ["vip"]),
      p.identify("legacy", 2000, { email: "legacy@example.com" }),
    ]);
    expect(outcome.poisoned).toEqual([]);
    expect(await readProfileOrNull(sql, p.id, "legacy")).toMatchObject({
      email: "legacy@example.com",
      tags: ["vip"],
      unsubscribed: true,
    });
    expect(refusals(await applyProfileOperations(stores, [p.edit("legacy", 2001, { plan: "pro" })]))).toEqual([
      { id: "legacy", map: "data" },
    ]);
    // An erasure stamped before the blob was written, which it keeps, still applies.
    expect((await applyProfileOperations(stores, [p.delete("legacy", 500)])).poisoned).toEqual([]);
    expect((await applyProfileOperations(stores, [p.delete("legacy", 3000)])).poisoned).toEqual([]);
    expect(await readProfileOrNull(sql, p.id, "legacy")).toBeNull();
  });
});

describe("a job whose every state operation is refused", () => {
  it("still erases the profiles its deletes name", async () => {
    const p = await newProject();
    await applyProfileOperations(stores, [p.identify("erased", 1000, { data: { plan: "pro" } })]);
    // U+0000: a value Postgres refuses, as it refuses a map past its bound.
    const outcome = await applyProfileOperations(stores, [
      p.delete("erased", 2000),
      p.identify("refused", 2000, { data: { note: "bad\u0000byte" } }),
    ]);
    expect(outcome.poisoned.map(({ operation }) => operation.id)).toEqual(["refused"]);
    expect(await readProfileOrNull(sql, p.id, "erased")).toBeNull();
    const key = await storedKeyOf(sql, p.id, "erased");
    expect(await sql`SELECT data FROM profiles WHERE project_id = ${p.id} AND key = ${key}`).toEqual([{ data: {} }]);
  });
});
