import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyProfileWrites, findProfile } from "@cm/db";
import {
  erasureState,
  isNewer,
  mergeStates,
  stamp,
  stateFromOperation,
  tieBreaker,
  type ProfileState,
  type StateOperation,
} from "@cm/domain";
import { createTestDatabase, layoutTimeout, type TestDatabase } from "../support/database";
import { profileOperations } from "../support/profile-operations";
import { createTestProject } from "../support/project";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase("profile_merge");
});
afterAll(() => db.drop());

/** States of every kind: each operation's, an erasure's, and merges of a few. */
function stateArbitrary(projectId: number, topicId: number) {
  const op = profileOperations(projectId);
  // A few distinct times only, so that ties and values stamped exactly at an erasure are common.
  const t = fc.integer({ min: 1, max: 5 });
  const operation = fc.oneof(
    fc
      .record({
        t,
        updateOnly: fc.boolean(),
        email: fc.option(fc.constantFrom("a@x.co", "b@x.co"), { nil: undefined }),
        phoneNumber: fc.option(fc.constantFrom("+1", "+2"), { nil: undefined }),
        data: fc.dictionary(
          fc.constantFrom("plan", "city"),
          fc.constantFrom("free", "pro", null, 'a"b', "Zürich", 7, 1.5),
        ),
        channels: fc.constantFrom([], [{ type: "push", address: "d1", platform: null }]),
        topics: fc.constantFrom([], [{ id: topicId, status: "subscribed" as const }]),
      })
      .map(({ t, ...fields }): StateOperation => op.identify("u", t, fields)),
    fc.record({ t, v: fc.constantFrom("x", null) }).map(({ t, v }) => op.edit("u", t, { plan: v })),
    fc
      .record({ t, tag: fc.constantFrom("p", "q"), on: fc.boolean() })
      .map(({ t, tag, on }) => (on ? op.tags("u", t, [tag]) : op.tags("u", t, [], [tag]))),
    fc.record({ t, off: fc.boolean() }).map(({ t, off }) => op.subscription("u", t, off)),
  );
  const single = fc.oneof(operation.map(stateFromOperation), t.map(erasureState));
  return fc.array(single, { minLength: 1, maxLength: 3 }).map((states) => states.reduce(mergeStates));
}

describe("the workers' SQL merge", () => {
  // Up to 1,500 writes one after another: on Citus each a distributed statement, whose shards run
  // the change feed's capture (docs/scaling.md, "The change feed on Citus").
  it("is libs/domain's mergeStates, erasures included", { timeout: layoutTimeout(30_000) }, async () => {
    const project = await createTestProject(db.sql, "merge");
    const topicId = await project.topic("T");
    let profile = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(stateArbitrary(project.id, topicId), { minLength: 1, maxLength: 5 }),
        async (states) => {
          const key = `i:u${(profile += 1)}`;
          for (const state of states) {
            await applyProfileWrites(db.sql, [{ projectId: project.id, key, externalId: key.slice(2), state }]);
          }
          const stored = await findProfile(db.sql, project.id, key);
          expect(stored?.state).toEqual(states.reduce((a: ProfileState, b) => mergeStates(a, b)));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("breaks ties as libs/domain's isNewer does, for values stored with a tie-breaker and without", async () => {
    const value = fc
      .oneof(
        fc.constantFrom(null, true, false, 0, -1, 2 ** 53 - 1, 2 ** 53, 1.5, 1e21, "", "/", "~", "a\u007fb"),
        fc.string({ maxLength: 70, unit: "binary-ascii" }),
        fc.string({ maxLength: 8, unit: "grapheme" }),
        fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 3 }),
      )
      .filter((v) => !JSON.stringify(v).includes("\\u0000")); // refused before it is queued
    await fc.assert(
      // Stored before migration 010 every value had `h`; both kinds meet in a merge.
      fc.asyncProperty(value, value, fc.boolean(), fc.boolean(), async (a, b, aBefore010, bBefore010) => {
        const stamped = (v: unknown, before010: boolean) => (before010 ? { t: 1, h: tieBreaker(v), v } : stamp(1, v));
        const [x, y] = [stamped(a, aBefore010), stamped(b, bBefore010)];
        const [row] = await db.sql<{ newer: boolean }[]>`
          SELECT lww_is_newer(${db.sql.json(x as never)}, ${db.sql.json(y as never)}) AS newer`;
        expect(row?.newer).toBe(isNewer(x, y));
      }),
      { numRuns: 500 },
    );
  });
});
