import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createProject, findProfile } from "@cm/db";
import { mergeStates, profileKeyForId, stateFromOperation, type IdentifyEvent, type ProfileState } from "@cm/domain";
import {
  createTestDatabaseBefore,
  KEYED_PROFILE_KEYS_MIGRATION,
  migrateBefore,
  type TestDatabase,
} from "../support/database";

const IDENTITY_MIGRATION = "007_one_identity_space.sql";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabaseBefore("identity_migration", IDENTITY_MIGRATION);
});
afterAll(() => db.drop());

/** A stored row as gateways before 007 wrote it: email-only users under "e:<email>", with no id. */
async function storeLegacy(projectId: number, key: string, state: ProfileState) {
  await db.sql`
    INSERT INTO profiles (project_id, key, external_id, created_t, email, data, channels, topic_choices)
    VALUES (${projectId}, ${key}, ${key.startsWith("i:") ? key.slice(2) : null}, ${state.createdT},
            ${state.email === null ? null : db.sql.json(state.email as never)}, ${db.sql.json(state.data as never)},
            ${db.sql.json(state.channels as never)}, ${db.sql.json(state.topics as never)})`;
}

/**
 * What reads back of a stored state: rows before 007 held no phone number, and before 008 only
 * the earliest creation, which 008 takes as the latest.
 */
const asStored = (state: ProfileState): ProfileState => ({ ...state, phoneNumber: null, lastCreatedT: state.createdT });

const event = (key: string, t: number, fields: Partial<IdentifyEvent>): IdentifyEvent => ({
  projectId: 0,
  key,
  id: key.slice(2),
  t,
  updateOnly: false,
  ...fields,
});

describe("migration 007: one identity space", () => {
  it("folds every email-keyed row into the profile of that id, keeping each field's stamp", async () => {
    const project = (await createProject(db.sql, "legacy")).id;
    const other = (await createProject(db.sql, "other")).id;

    // Fields of the email row are newer for some keys and older for others, so each side wins somewhere.
    const byEmail = stateFromOperation(
      event("e:ann@example.com", 1_000, {
        email: "ann@example.com",
        data: { plan: "pro", city: "Oslo" },
        channels: [{ type: "push", address: "t1", platform: "ios" }],
        topics: [{ id: 7, status: "unsubscribed" }],
      }),
    );
    const laterPlan = stateFromOperation(event("e:ann@example.com", 3_000, { data: { plan: "business" } }));
    const byId = stateFromOperation(
      event("i:ann@example.com", 2_000, {
        email: "ann@example.com",
        data: { plan: "free", language: "en", city: null },
        topics: [{ id: 7, status: "subscribed" }],
      }),
    );
    await storeLegacy(project, "e:ann@example.com", mergeStates(byEmail, laterPlan));
    await storeLegacy(project, "i:ann@example.com", byId);

    // Seen only with update_only under the email, created later under the id.
    const hidden = stateFromOperation(event("e:late@example.com", 4_000, { updateOnly: true, data: { early: 1 } }));
    const created = stateFromOperation(event("i:late@example.com", 5_000, { data: { b: 2 } }));
    await storeLegacy(project, "e:late@example.com", hidden);
    await storeLegacy(project, "i:late@example.com", created);

    const solo = stateFromOperation(event("e:solo@example.com", 1_500, { email: "solo@example.com", data: { a: 1 } }));
    await storeLegacy(project, "e:solo@example.com", solo);
    await storeLegacy(
      other,
      "e:ann@example.com",
      stateFromOperation(event("e:ann@example.com", 9_000, { data: { plan: "other" } })),
    );

    expect((await migrateBefore(db.sql, KEYED_PROFILE_KEYS_MIGRATION))[0]).toBe(IDENTITY_MIGRATION);

    expect(await db.sql`SELECT key FROM profiles WHERE key LIKE 'e:%'`).toHaveLength(0);
    expect((await db.sql`SELECT count(*)::int AS n FROM profiles`)[0]?.n).toBe(4);

    const ann = await findProfile(db.sql, project, profileKeyForId("ann@example.com"));
    expect(ann?.externalId).toBe("ann@example.com");
    expect(ann?.state).toEqual(asStored(mergeStates(mergeStates(byEmail, laterPlan), byId)));
    expect(ann?.state.data.plan?.v).toBe("business");
    expect(ann?.state.topics["7"]?.v).toBe("subscribed");

    const late = await findProfile(db.sql, project, profileKeyForId("late@example.com"));
    expect(late?.state).toEqual(asStored(mergeStates(hidden, created)));
    expect(late?.state.createdT).toBe(5_000);

    const soloRow = await findProfile(db.sql, project, profileKeyForId("solo@example.com"));
    expect(soloRow).toMatchObject({ externalId: "solo@example.com", state: asStored(solo) });

    const otherAnn = await findProfile(db.sql, other, profileKeyForId("ann@example.com"));
    expect(otherAnn?.state.data.plan?.v).toBe("other");
  });
});
