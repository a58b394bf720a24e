import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyProfileWrites, createProject, findProfile, migrationNames } from "@cm/db";
import {
  erasureState,
  mergeStates,
  stateFromOperation,
  visibleProfile,
  type IdentifyEvent,
  type ProfileState,
  type StateOperation,
} from "@cm/domain";
import {
  createTestDatabaseBefore,
  KEYED_PROFILE_KEYS_MIGRATION,
  migrateBefore,
  type TestDatabase,
} from "../support/database";

const LIFECYCLE_MIGRATION = "008_profile_lifecycle.sql";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabaseBefore("lifecycle_migration", LIFECYCLE_MIGRATION);
});
afterAll(() => db.drop());

/** A row as workers before 008 wrote it: no last_created_t, erasure, tags or opt-out. */
async function storeBefore008(projectId: number, key: string, state: ProfileState) {
  const json = (value: unknown) => (value === null ? null : db.sql.json(value as never));
  await db.sql`
    INSERT INTO profiles (project_id, key, external_id, created_t, email, phone_number, data, channels, topic_choices)
    VALUES (${projectId}, ${key}, ${key.slice(2)}, ${state.createdT}, ${json(state.email)}, ${json(state.phoneNumber)},
            ${json(state.data)}, ${json(state.channels)}, ${json(state.topics)})`;
}

async function deadLetterBefore008(projectId: number, event: string) {
  await db.sql`INSERT INTO identify_dead_letters (project_id, event, error) VALUES (${projectId}, ${event}, 'refused')`;
}

const identify = (id: string, t: number, fields: Partial<IdentifyEvent> = {}): StateOperation => ({
  projectId: 0,
  key: `i:${id}`,
  id,
  t,
  updateOnly: false,
  ...fields,
});
const state = (...operations: StateOperation[]) => operations.map(stateFromOperation).reduce(mergeStates);

describe("migration 008: the profile lifecycle", () => {
  it("reads every profile stored before it as before, and finds the profile of every dead letter", async () => {
    const project = (await createProject(db.sql, "before 008")).id;
    const profiles = {
      "i:ann": state(
        identify("ann", 1_000, { email: "ann@example.com", phoneNumber: "+15550100", data: { plan: "free" } }),
        identify("ann", 2_000, { updateOnly: true, data: { plan: "pro" } }),
        identify("ann", 3_000, {
          data: { city: "Oslo" },
          channels: [{ type: "push", address: "t1", platform: "ios" }],
          topics: [{ id: 7, status: "unsubscribed" }],
        }),
      ),
      "i:hidden": state(identify("hidden", 4_000, { updateOnly: true, data: { early: 1 } })),
    };
    for (const [key, stored] of Object.entries(profiles)) await storeBefore008(project, key, stored);

    let deep = '"bottom"';
    for (let i = 0; i < 20_000; i += 1) deep = `{"d":${deep}}`;
    const letters = [
      [`{"projectId":${project},"key":"i:plain","id":"plain","t":1,"updateOnly":false}`, "i:plain"],
      [`{"projectId":${project},"key":"i:zero","id":"zero","t":1,"data":{"note":"bad\\u0000byte"}}`, "i:zero"],
      [`{"projectId":${project},"key":"i:lone","id":"lone","t":1,"data":{"note":"\\ud800"}}`, "i:lone"],
      [`{"projectId":${project},"key":"i:quote\\"d\\\\","id":"quote","t":1}`, 'i:quote"d\\'],
      [`{"projectId":${project},"key":"e:mail@example.com","id":null,"t":1}`, "i:mail@example.com"],
      [`{"projectId":${project},"key":"i:deep","id":"deep","t":1,"data":${deep}}`, "i:deep"],
      [`{"unwritable":"Maximum call stack size exceeded"}`, null],
    ] as const;
    for (const [event] of letters) await deadLetterBefore008(project, event);

    expect(await migrateBefore(db.sql, KEYED_PROFILE_KEYS_MIGRATION)).toEqual(
      (await migrationNames()).filter((name) => name >= LIFECYCLE_MIGRATION && name < KEYED_PROFILE_KEYS_MIGRATION),
    );

    for (const [key, stored] of Object.entries(profiles)) {
      const row = await findProfile(db.sql, project, key);
      // Before 008 a row kept only its earliest creation, which now stands in for the latest.
      expect(row?.state, key).toEqual({ ...stored, lastCreatedT: stored.createdT });
      expect(visibleProfile(row!.state), key).toEqual(visibleProfile(stored));
    }
    expect(visibleProfile((await findProfile(db.sql, project, "i:ann"))!.state)).toMatchObject({
      email: "ann@example.com",
      data: { plan: "pro", city: "Oslo" },
      tags: [],
      unsubscribed: false,
    });
    expect(await findProfile(db.sql, project, "i:hidden")).toMatchObject({ state: { lastCreatedT: null } });

    const keys = await db.sql<{ profile_key: string | null }[]>`
      SELECT profile_key FROM identify_dead_letters ORDER BY id`;
    expect(keys.map((row) => row.profile_key)).toEqual(letters.map(([, key]) => key));
  });

  it("reads a row that a worker older than it writes during a rolling update as the profile it is", async () => {
    const project = (await createProject(db.sql, "rolling update")).id;
    await storeBefore008(project, "i:old-worker", state(identify("old-worker", 5_000, { data: { plan: "pro" } })));
    expect(visibleProfile((await findProfile(db.sql, project, "i:old-worker"))!.state)?.data).toEqual({ plan: "pro" });

    // An erasure stamped before its creation leaves it a profile; one after it erases it.
    const erase = (t: number) =>
      applyProfileWrites(db.sql, [
        { projectId: project, key: "i:old-worker", externalId: null, state: erasureState(t) },
      ]);
    await erase(4_000);
    expect(visibleProfile((await findProfile(db.sql, project, "i:old-worker"))!.state)?.data).toEqual({ plan: "pro" });
    await erase(6_000);
    expect(visibleProfile((await findProfile(db.sql, project, "i:old-worker"))!.state)).toBeNull();
  });
});
