import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyProfileWrites, createProject, findProfile, migrationNames } from "@cm/db";
import {
  erasureState,
  mergeStates,
  stamp,
  stampBounds,
  stateFromOperation,
  type ProfileState,
  type StateOperation,
} from "@cm/domain";
import { profileOperations } from "../support/profile-operations";
import {
  createTestDatabaseBefore,
  KEYED_PROFILE_KEYS_MIGRATION,
  migrateBefore,
  type TestDatabase,
} from "../support/database";

const STAMP_BOUNDS_MIGRATION = "009_profile_stamp_bounds.sql";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabaseBefore("stamp_bounds_migration", STAMP_BOUNDS_MIGRATION);
});
afterAll(() => db.drop());

const json = (value: unknown) => (value === null ? null : db.sql.json(value as never));

/** A row as workers before 009 write it: every field, no stamp bounds; updated_at set anew. */
async function storeBefore009(projectId: number, key: string, state: ProfileState) {
  await db.sql`
    INSERT INTO profiles AS p (project_id, key, external_id, created_t, last_created_t, deleted_t, email, phone_number,
                               data, channels, topic_choices, tags, unsubscribed)
    VALUES (${projectId}, ${key}, ${key.slice(2)}, ${state.createdT}, ${state.lastCreatedT}, ${state.deletedT},
            ${json(state.email)}, ${json(state.phoneNumber)}, ${json(state.data)}, ${json(state.channels)},
            ${json(state.topics)}, ${json(state.tags)}, ${json(state.unsubscribed)})
    ON CONFLICT (project_id, key) DO UPDATE SET
      created_t = excluded.created_t, last_created_t = excluded.last_created_t, deleted_t = excluded.deleted_t,
      email = excluded.email, phone_number = excluded.phone_number, data = excluded.data,
      channels = excluded.channels, topic_choices = excluded.topic_choices, tags = excluded.tags,
      unsubscribed = excluded.unsubscribed, updated_at = now()`;
}

const { identify } = profileOperations(0);
const state = (...parts: (StateOperation | ProfileState)[]): ProfileState =>
  parts.map((p) => ("createdT" in p ? p : stateFromOperation(p))).reduce(mergeStates);

async function write(projectId: number, key: string, written: ProfileState) {
  await applyProfileWrites(db.sql, [{ projectId, key, externalId: key.slice(2), state: written }]);
}

async function newestT(projectId: number, key: string) {
  const [row] = await db.sql<{ newest_t: string | null; trusted: boolean | null }[]>`
    SELECT newest_t, newest_t_at = updated_at AS trusted FROM profiles WHERE project_id = ${projectId} AND key = ${key}`;
  return { newest: row?.newest_t === null || row === undefined ? null : Number(row.newest_t), trusted: row?.trusted };
}

describe("migration 009: stamp bounds", () => {
  it("keeps every row as it was, and merges writes into rows stored before it as into any", async () => {
    const project = (await createProject(db.sql, "before 009")).id;
    const rows = {
      "i:ann": state(
        identify("ann", 1_000, { email: "ann@example.com", data: { plan: "free", city: "Oslo" } }),
        identify("ann", 3_000, { data: { plan: "pro" }, channels: [{ type: "push", address: "t1", platform: null }] }),
      ),
      "i:bob": state(identify("bob", 2_000, { data: { plan: "team" } }), erasureState(2_500)),
      "i:ghost": state(identify("ghost", 4_000, { updateOnly: true, data: { early: 1 } })),
    };
    for (const [key, stored] of Object.entries(rows)) await storeBefore009(project, key, stored);

    expect(await migrateBefore(db.sql, KEYED_PROFILE_KEYS_MIGRATION)).toEqual(
      (await migrationNames()).filter((name) => name >= STAMP_BOUNDS_MIGRATION && name < KEYED_PROFILE_KEYS_MIGRATION),
    );
    for (const [key, stored] of Object.entries(rows)) {
      expect((await findProfile(db.sql, project, key))?.state, key).toEqual(stored);
      expect(await newestT(project, key), key).toEqual({ newest: null, trusted: null });
    }

    // Newer than the row (Ann, Bob) and older than part of it (the ghost): each is mergeStates,
    // and the row's newest stamp is known from then on.
    const writes = {
      "i:ann": state(identify("ann", 5_000, { data: { plan: "team" } })),
      "i:bob": state(identify("bob", 6_000, { email: "bob@example.com" })),
      "i:ghost": state(identify("ghost", 3_500, { data: { early: 2, late: 3 } })),
    };
    for (const [key, written] of Object.entries(writes)) {
      await write(project, key, written);
      const merged = mergeStates(rows[key as keyof typeof rows], written);
      expect((await findProfile(db.sql, project, key))?.state, key).toEqual(merged);
      expect(await newestT(project, key), key).toEqual({ newest: stampBounds(merged)?.newest, trusted: true });
    }
  });

  it("does not trust the newest stamp of a row that a worker older than it wrote since, during a rolling update", async () => {
    const project = (await createProject(db.sql, "rolling update")).id;
    const key = "i:carol";
    const first = state(identify("carol", 1_000, { data: { plan: "free" } }));
    await write(project, key, first);
    expect(await newestT(project, key)).toEqual({ newest: 1_000, trusted: true });

    // An older worker writes a newer plan and leaves newest_t as it was.
    const byOldWorker = state(first, identify("carol", 9_000, { data: { plan: "pro" } }));
    await storeBefore009(project, key, byOldWorker);
    expect(await newestT(project, key)).toMatchObject({ newest: 1_000, trusted: false });

    // Newer than newest_t says, older than the old worker's plan: that plan must stay.
    const late = state(identify("carol", 5_000, { data: { plan: "team", seats: 3 } }));
    await write(project, key, late);
    const merged = mergeStates(byOldWorker, late);
    expect(merged.data.plan).toEqual(stamp(9_000, "pro"));
    expect((await findProfile(db.sql, project, key))?.state).toEqual(merged);
    expect(await newestT(project, key)).toEqual({ newest: 9_000, trusted: true });
  });
});
