import { randomUUID } from "node:crypto";
import { applyProfileWrites, createProject, findProfile, migrate } from "@cm/db";
import { erasureState, mergeStates, stateFromOperation, type ProfileState, type StateOperation } from "@cm/domain";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabaseBefore, KEYED_PROFILE_KEYS_MIGRATION, type TestDatabase } from "../support/database";
import { profileOperations, readProfileOrNull, storedKeyOf } from "../support/profile-operations";

// Migration 015: every key "i:<id>" becomes its keyed hash, and rows an erasure left empty lose their id.

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabaseBefore("profile_keys_migration", KEYED_PROFILE_KEYS_MIGRATION);
});
afterAll(() => db.drop());

const state = (...parts: (StateOperation | ProfileState)[]): ProfileState =>
  parts.map((p) => ("createdT" in p ? p : stateFromOperation(p))).reduce(mergeStates);

describe("migration 015: profile keys become keyed hashes", () => {
  it("moves every row, link, erasure, event and dead letter to the keyed hash of its id, keeping no erased id", async () => {
    const project = (await createProject(db.sql, "before 015")).id;
    const other = (await createProject(db.sql, "other")).id;
    const { identify } = profileOperations(project);
    const rows: [number, string, ProfileState][] = [
      [
        project,
        "ann@example.com",
        state(identify("ann@example.com", 1_000, { email: "ann@example.com", data: { a: 1 } })),
      ],
      [project, "bob@example.com", state(identify("bob@example.com", 1_000, { data: { b: 1 } }), erasureState(2_000))],
      [project, "cy", state(identify("cy", 1_000, { data: { c: 1 } }), erasureState(2_000), identify("cy", 3_000))],
      [other, "ann@example.com", state(identify("ann@example.com", 5_000, { data: { other: true } }))],
    ];
    await applyProfileWrites(
      db.sql,
      rows.map(([projectId, id, written]) => ({ projectId, key: `i:${id}`, externalId: id, state: written })),
    );
    await db.sql`INSERT INTO profile_links (project_id, from_key, to_key, t) VALUES (${project}, 'i:ann@example.com', 'i:ann-2', 1500)`;
    await db.sql`INSERT INTO profile_erasures (project_id, key, t) VALUES (${project}, 'i:bob@example.com', 2000)`;
    // As the workers of then stored it: storeEvents writes columns of later migrations.
    await db.sql`
      INSERT INTO events (project_id, user_key, id, name, name_key, data, source, created_at, received_at)
      VALUES (${project}, 'i:ann@example.com', ${randomUUID()}, 'Paid', 'paid', NULL, NULL,
              timestamptz 'epoch' + interval '1200 milliseconds', timestamptz 'epoch' + interval '1200 milliseconds')`;
    await db.sql`
      INSERT INTO identify_dead_letters (project_id, job_id, event, error, profile_key)
      VALUES (${project}, '1', '{}', 'refused', 'i:ann@example.com')`;
    // As of then too: insertTopic writes every column a later migration adds to topics.
    const [topic] = await db.sql<{ id: number }[]>`
      INSERT INTO topics (project_id, name, default_status) VALUES (${project}, 'News', 'subscribed') RETURNING id`;
    await db.sql`INSERT INTO topic_fanouts (topic_id, generation, after_key) VALUES (${topic!.id}, 1, 'i:m')`;

    expect((await migrate(db.sql))[0]).toBe(KEYED_PROFILE_KEYS_MIGRATION);

    const key = (projectId: number, id: string) => storedKeyOf(db.sql, projectId, id);
    const leftOver = await db.sql`
      SELECT 'profiles' AS t FROM profiles WHERE key LIKE 'i:%' OR key NOT LIKE 'h:%'
      UNION ALL SELECT 'links' FROM profile_links WHERE from_key NOT LIKE 'h:%' OR to_key NOT LIKE 'h:%'
      UNION ALL SELECT 'erasures' FROM profile_erasures WHERE key NOT LIKE 'h:%'
      UNION ALL SELECT 'events' FROM events WHERE user_key NOT LIKE 'h:%'
      UNION ALL SELECT 'dead letters' FROM identify_dead_letters WHERE profile_key NOT LIKE 'h:%'`;
    expect(leftOver).toEqual([]);

    const ann = await findProfile(db.sql, project, await key(project, "ann@example.com"));
    expect(ann?.externalId).toBe("ann@example.com");
    expect(ann?.state).toEqual(rows[0]?.[2]);
    expect((await findProfile(db.sql, project, await key(project, "bob@example.com")))?.externalId).toBeNull();
    expect((await findProfile(db.sql, project, await key(project, "bob@example.com")))?.state.deletedT).toBe(2_000);
    expect((await findProfile(db.sql, project, await key(project, "cy")))?.externalId).toBe("cy");
    expect((await findProfile(db.sql, other, await key(other, "ann@example.com")))?.state.data).toEqual(
      rows[3]?.[2].data,
    );
    // Each project has a secret of its own.
    expect(await key(project, "ann@example.com")).not.toBe(await key(other, "ann@example.com"));

    expect(await db.sql`SELECT from_key, to_key FROM profile_links`).toEqual([
      { from_key: await key(project, "ann@example.com"), to_key: await key(project, "ann-2") },
    ]);
    expect(await db.sql`SELECT key FROM profile_erasures`).toEqual([{ key: await key(project, "bob@example.com") }]);
    expect(await db.sql`SELECT user_key FROM events`).toEqual([{ user_key: await key(project, "ann@example.com") }]);
    expect(await db.sql`SELECT profile_key FROM identify_dead_letters`).toEqual([
      { profile_key: await key(project, "ann@example.com") },
    ]);
    expect(await db.sql`SELECT after_key FROM topic_fanouts`).toEqual([{ after_key: null }]);

    // The read finds the profile by either id, under the id its reidentify gave it.
    const read = await readProfileOrNull(db.sql, project, "ann@example.com");
    expect(read).toMatchObject({ id: "ann-2", email: "ann@example.com", data: { a: 1 }, event_count: 1 });
    expect(await readProfileOrNull(db.sql, project, "ann-2")).toMatchObject({ id: "ann-2" });
    expect(await readProfileOrNull(db.sql, project, "bob@example.com")).toBeNull();
  });
});
