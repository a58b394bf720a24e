import { randomUUID } from "node:crypto";
import { CHANGE_PAGE_BYTES, createProject, insertTopic, readChanges, trimChanges, type Sql } from "@cm/db";
import { applyProfileOperations, applyStateOperations, storeTrackedEvents } from "@cm/app";
import { newTopicValues, positionBefore, type ChangePosition, type TrackedEvent } from "@cm/domain";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { uniqueName } from "../support/env";
import { profileOperations } from "../support/profile-operations";
import { testProfileStores } from "../support/profile-stores";
import { openTransaction } from "../support/transactions";
import { feedSettled } from "../support/change-feed";

// The change feed's capture (migration 022, libs/db/functions/change_feed.sql) and its read
// (libs/db/src/changes.ts) against the real Postgres, through the workers' own use cases.

let db: TestDatabase;
let stores: ReturnType<typeof testProfileStores>;
beforeAll(async () => {
  db = await createTestDatabase("change_feed");
  stores = testProfileStores(db.sql, uniqueName("change_feed"));
});
afterAll(async () => {
  await stores.close();
  await db.drop();
});

async function newProject() {
  const { id } = await createProject(db.sql, "feed");
  return { id, ...profileOperations(id) };
}

/**
 * The stored key of a user's profile. A test's own UPDATE names it: on Citus an UPDATE by another
 * column reaches every shard and takes each shard's lock, so that two open ones wait for each other.
 */
async function keyOf(projectId: number, userId: string): Promise<string> {
  const [row] = await db.sql<{ key: string }[]>`
    SELECT key FROM profiles WHERE project_id = ${projectId} AND external_id = ${userId}`;
  return (row as { key: string }).key;
}

/** Every change of the project from `after` on, read page by page as a consumer would. */
async function readAll(projectId: number, after: ChangePosition | null = null, limit = 1000) {
  await feedSettled(db.sql);
  const changes = [];
  let cursor = after;
  for (;;) {
    const page = await readChanges(db.sql, projectId, cursor, limit, null);
    changes.push(...page.changes);
    cursor = page.next;
    if (page.caughtUp) return { changes, cursor };
  }
}

const shapes = async (projectId: number) =>
  (await readAll(projectId)).changes.map(({ type, userId, change }) => ({ type, userId, change }));

describe("capture", () => {
  it("records each profile operation as the feed's change, in the order applied", async () => {
    const p = await newProject();
    const topic = await insertTopic(db.sql, p.id, newTopicValues({ name: "News", default_status: "subscribed" }));
    await applyProfileOperations(stores, [
      p.identify("ada", 1000, { email: "ada@example.com", data: { plan: "free" } }),
    ]);
    await applyProfileOperations(stores, [
      p.identify("ada", 1001, { email: "ada@example.com", data: { plan: "free" } }),
    ]);
    await applyProfileOperations(stores, [p.edit("ada", 1002, { plan: "team", seats: null })]);
    await applyProfileOperations(stores, [p.tags("ada", 1003, ["vip"], ["gone"])]);
    await applyProfileOperations(stores, [p.subscription("ada", 1004, true)]);
    await applyProfileOperations(stores, [p.subscription("ada", 1005, false)]);
    await applyProfileOperations(stores, [
      p.identify("ada", 1006, { topics: [{ id: topic.id, status: "unsubscribed" }] }),
    ]);
    await applyProfileOperations(stores, [p.reidentify("ada", "ada-2", 1007)]);
    expect(await shapes(p.id)).toEqual([
      { type: "profile.created", userId: "ada", change: { email: "ada@example.com", data: { plan: "free" } } },
      // the identify sent again changed nothing, and a key cleared that was never set is no change
      { type: "profile.changed", userId: "ada", change: { data: { plan: "team" } } },
      { type: "tags.changed", userId: "ada", change: { added: ["vip"], removed: [] } },
      { type: "unsubscribed", userId: "ada", change: {} },
      { type: "resubscribed", userId: "ada", change: {} },
      {
        type: "topic.choice_changed",
        userId: "ada",
        change: { topic_id: topic.id, status: "unsubscribed", source: "explicit" },
      },
      { type: "user.reidentified", userId: "ada-2", change: { previous_user_id: "ada" } },
    ]);
  });

  it("renders a stored event from its row, and an erasure removes every earlier change of the user", async () => {
    const p = await newProject();
    await applyProfileOperations(stores, [p.identify("bob", 1000, { email: "bob@example.com" })]);
    await applyProfileOperations(stores, [p.identify("eve", 1000, { email: "eve@example.com" })]);
    const event: TrackedEvent = {
      projectId: p.id,
      key: "i:bob",
      userId: "bob",
      eventId: randomUUID(),
      name: "Clicked",
      data: { button: "buy" },
      t: 1500,
      receivedAt: 1500,
    };
    await storeTrackedEvents(stores, [event]);
    expect((await shapes(p.id)).map(({ type, userId }) => `${type} ${userId}`)).toEqual([
      "profile.created bob",
      "profile.created eve",
      "event.stored bob",
    ]);
    const [, , stored] = (await readAll(p.id)).changes;
    expect(stored?.change).toMatchObject({ id: event.eventId, event_name: "Clicked", data: { button: "buy" } });

    await applyProfileOperations(stores, [p.delete("bob", 2000)]);
    expect(await shapes(p.id)).toEqual([
      { type: "profile.created", userId: "eve", change: { email: "eve@example.com" } },
      { type: "user.erased", userId: "bob", change: {} },
    ]);
    const stored_ = await db.sql`SELECT type, change FROM changes WHERE project_id = ${p.id}`;
    expect(JSON.stringify(stored_)).not.toContain("bob@example.com");
  });

  it("serves no event stamped before its user's erasure from the erasure's commit on, before the event itself is deleted", async () => {
    const p = await newProject();
    await applyProfileOperations(stores, [p.identify("racer", 1000, { email: "racer@example.com" })]);
    const [{ key }] = await db.sql<{ key: string }[]>`
      SELECT key FROM profiles WHERE project_id = ${p.id} AND external_id = 'racer'`;
    // An event stored by a transaction still open while the erasure commits: the erasure cannot
    // see its change to remove it, nor the job the event to delete it.
    const storing = await openTransaction(db.sql);
    await storing.run`
      INSERT INTO events (project_id, user_key, id, name, name_key, data, created_at, received_at)
      VALUES (${p.id}, ${key}, ${randomUUID()}, 'Raced', 'raced', '{"secret": "s"}',
              timestamptz 'epoch' + interval '1.5 seconds', timestamptz 'epoch' + interval '1.5 seconds')`;
    await applyProfileOperations(stores, [p.delete("racer", 2000)]);
    await storing.commit();
    expect(await db.sql`SELECT 1 FROM events WHERE project_id = ${p.id}`).toHaveLength(1);
    expect(await shapes(p.id)).toEqual([{ type: "user.erased", userId: "racer", change: {} }]);
  });

  it("records the defaults a topic's fan-out gives, one change a profile", async () => {
    const p = await newProject();
    await applyProfileOperations(stores, [p.identify("a", 1000), p.identify("b", 1000)]);
    const topic = await insertTopic(db.sql, p.id, newTopicValues({ name: "Offers", default_status: "unsubscribed" }));
    await db.sql`UPDATE profiles SET topic_defaults = jsonb_build_object(${String(topic.id)}::text, 'unsubscribed')
                  WHERE project_id = ${p.id}`;
    const defaults = (await shapes(p.id)).filter(({ type }) => type === "topic.choice_changed");
    expect(defaults).toHaveLength(2);
    expect(defaults[0]?.change).toEqual({ topic_id: topic.id, status: "unsubscribed", source: "default" });
  });
});

describe("order", () => {
  it("delivers two changes committed in the reverse order of their positions once each, in position order", async () => {
    const p = await newProject();
    await applyProfileOperations(stores, [p.identify("first", 1000), p.identify("second", 1000)]);
    const start = (await readAll(p.id)).cursor;
    const [first, second] = [await keyOf(p.id, "first"), await keyOf(p.id, "second")];
    const older = await openTransaction(db.sql);
    const younger = await openTransaction(db.sql);
    await older.run`UPDATE profiles SET tags = '{"a": {"t": 2000, "v": true}}' WHERE project_id = ${p.id} AND key = ${first}`;
    await younger.run`UPDATE profiles SET tags = '{"b": {"t": 2000, "v": true}}' WHERE project_id = ${p.id} AND key = ${second}`;
    await younger.commit();
    // The younger is committed, but the older still runs: nothing after the cursor can be read yet.
    const polled = await readChanges(db.sql, p.id, start, 100, null);
    expect(polled.changes).toEqual([]);
    await older.commit();
    const { changes } = await readAll(p.id, polled.next);
    expect(changes.map(({ userId, change }) => [userId, change])).toEqual([
      ["first", { added: ["a"], removed: [] }],
      ["second", { added: ["b"], removed: [] }],
    ]);
  });

  it("delivers one user's changes in the order they were applied, even by an older transaction", async () => {
    const p = await newProject();
    await applyProfileOperations(stores, [p.identify("u", 1000), p.identify("other", 1000)]);
    const start = (await readAll(p.id)).cursor;
    const [u, other] = [await keyOf(p.id, "u"), await keyOf(p.id, "other")];
    // B starts first (its xid is the older), A then applies U and commits, B applies U after it.
    const b = await openTransaction(db.sql);
    await b.run`UPDATE profiles SET data = '{"by": {"t": 2000, "v": "b"}}' WHERE project_id = ${p.id} AND key = ${other}`;
    const a = await openTransaction(db.sql);
    await a.run`UPDATE profiles SET tags = '{"a": {"t": 2000, "v": true}}' WHERE project_id = ${p.id} AND key = ${u}`;
    await a.commit();
    expect((await readChanges(db.sql, p.id, start, 100, null)).changes).toEqual([]);
    await b.run`UPDATE profiles SET tags = tags || '{"a": {"t": 2001, "v": false}}' WHERE project_id = ${p.id} AND key = ${u}`;
    await b.commit();
    const { changes } = await readAll(p.id, start);
    expect(changes.filter(({ userId }) => userId === "u").map(({ change }) => change)).toEqual([
      { added: ["a"], removed: [] },
      { added: [], removed: ["a"] },
    ]);
  });

  it("delivers one user's changes in the order applied when the workers' upsert of an older transaction comes second", async () => {
    const p = await newProject();
    await applyProfileOperations(stores, [p.identify("u", 1000), p.identify("other", 1000)]);
    const start = (await readAll(p.id)).cursor;
    const other = await keyOf(p.id, "other");
    // B starts first (its xid is the older); A applies U and commits; B's upsert applies U after it.
    const b = await openTransaction(db.sql);
    await b.run`UPDATE profiles SET data = '{"by": {"t": 2000, "v": "b"}}' WHERE project_id = ${p.id} AND key = ${other}`;
    const a = await openTransaction(db.sql);
    await applyStateOperations(a.run as unknown as Sql, [p.identify("u", 2000, { data: { by: "a" } })]);
    await a.commit();
    await applyStateOperations(b.run as unknown as Sql, [p.identify("u", 2001, { data: { by: "b" } })]);
    await b.commit();
    const { changes } = await readAll(p.id, start);
    expect(changes.filter(({ userId }) => userId === "u").map(({ change }) => change)).toEqual([
      { data: { by: "a" } },
      { data: { by: "b" } },
    ]);
  });
});

describe("a profile's write", () => {
  it("serves the changes one write makes of a profile in pages that may end inside its row, each once", async () => {
    const p = await newProject();
    await applyProfileOperations(stores, [
      p.identify("multi", 1000, { email: "multi@example.com" }),
      p.tags("multi", 1001, ["vip"]),
      p.subscription("multi", 1002, true),
    ]);
    await applyProfileOperations(stores, [p.identify("next", 1000)]);
    await feedSettled(db.sql);
    const served = [];
    let cursor: ChangePosition | null = null;
    for (;;) {
      const page = await readChanges(db.sql, p.id, cursor, 1, null);
      served.push(...page.changes);
      cursor = page.next;
      if (page.caughtUp) break;
    }
    expect(served.map(({ type, userId }) => `${type} ${userId}`)).toEqual([
      "profile.created multi",
      "tags.changed multi",
      "unsubscribed multi",
      "profile.created next",
    ]);
    // One row: the same position, an index for each change but the last.
    const [created, tagged, unsubscribed] = served.map(({ position }) => position);
    expect([created?.index, tagged?.index, unsubscribed?.index]).toEqual(["0", "1", undefined]);
    expect({ ...created, index: undefined }).toEqual({ ...unsubscribed, index: undefined });
    // A filtered read serves the change at the same position.
    const tags = await readChanges(db.sql, p.id, null, 10, ["tags.changed"]);
    expect(tags.changes.map(({ position }) => position)).toEqual([tagged]);
    expect(await readChanges(db.sql, p.id, tagged!, 10, ["unsubscribed", "tags.changed"])).toMatchObject({
      changes: [{ type: "unsubscribed", position: unsubscribed }],
    });
  });

  it("reads the changes stored one a row before migration 025 as they were stored", async () => {
    const p = await newProject();
    await applyProfileOperations(stores, [p.identify("old", 1000)]);
    const key = await keyOf(p.id, "old");
    // Without a position: change_position gives it where the row is stored, as to a reidentify's.
    await db.sql`
      INSERT INTO changes (project_id, user_key, type, user_id, change)
      VALUES (${p.id}, ${key}, 'profile.changed', 'old',
              '{"since": 1000, "email": {"t": 1500, "v": "old@example.com"}, "phone_number": null, "data": null, "channels": null}'),
             (${p.id}, ${key}, 'tags.changed', 'old',
              '{"added": ["vip"], "removed": []}')`;
    expect((await shapes(p.id)).slice(1)).toEqual([
      { type: "profile.changed", userId: "old", change: { email: "old@example.com" } },
      { type: "tags.changed", userId: "old", change: { added: ["vip"], removed: [] } },
    ]);
  });
});

describe("a page's bytes", () => {
  /** What each change's row holds, uncompressed: its row before and after, and as JSON, which the gateway reads. */
  async function rowBytes(changes: readonly { position: ChangePosition }[]) {
    const sizes = [];
    for (const { position } of changes) {
      const [row] = await db.sql<{ stored: number; rendered: number }[]>`
        SELECT (profile_image_bytes(before) + profile_image_bytes(after))::integer AS stored,
               octet_length(json_build_object('before', before, 'after', after)::text) AS rendered
          FROM changes WHERE pos_xid = ${position.xid}::xid8 AND seq = ${position.seq}::bigint`;
      sizes.push(row as { stored: number; rendered: number });
    }
    return sizes;
  }

  /** Every page from the project's first change on, as a reader paging on with `limit` reads them. */
  async function pages(projectId: number, limit: number, types: Parameters<typeof readChanges>[4], maxBytes?: number) {
    await feedSettled(db.sql);
    const read = [];
    let cursor: ChangePosition | null = null;
    for (;;) {
      const page = await readChanges(db.sql, projectId, cursor, limit, types, maxBytes);
      if (cursor !== null) expect(positionBefore(cursor, page.next), "the cursor moves").toBe(true);
      cursor = page.next;
      if (page.changes.length > 0) read.push(page.changes);
      if (page.caughtUp) return read;
    }
  }

  it("ends a page once the rows it read pass CHANGE_PAGE_BYTES, with at least one change, and a reader paging on gets each change once", async () => {
    const p = await newProject();
    // Three profiles grown to about 1 MB of data each, 250 KB a write (as in issue 44): the rows of
    // their writes hold the profile before and after, 0.25 to 1.75 MB each, 12 MB together. The
    // values compress to almost nothing, as Postgres stores them: what a page holds is measured
    // as it is handed over, not as it is stored.
    for (const k of [1, 2, 3, 4])
      for (const id of ["a", "b", "c"])
        await applyProfileOperations(stores, [p.identify(id, 1000 + k, { data: { [`k${k}`]: id.repeat(250_000) } })]);
    const read = await pages(p.id, 100, null);
    expect(read.length).toBeGreaterThan(2);
    for (const changes of read) {
      expect(changes.length).toBeGreaterThan(0);
      const rows = await rowBytes(changes);
      const sum = (of: "stored" | "rendered", bytes: typeof rows) => bytes.reduce((total, row) => total + row[of], 0);
      expect(sum("stored", rows.slice(0, -1))).toBeLessThan(CHANGE_PAGE_BYTES);
      expect(sum("rendered", rows)).toBeLessThan(CHANGE_PAGE_BYTES + 2 * 1024 * 1024);
    }
    expect(read.flat().map(({ type, userId }) => `${type} ${userId}`)).toEqual([
      ...["a", "b", "c"].map((id) => `profile.created ${id}`),
      ...Array.from({ length: 9 }, (_, i) => `profile.changed ${["a", "b", "c"][i % 3]}`),
    ]);
    expect(read.flat().map(({ change }) => Object.keys(change.data as object))).toEqual(
      [1, 2, 3, 4].flatMap((k) => [[`k${k}`], [`k${k}`], [`k${k}`]]),
    );
  });

  it("serves a row alone when it alone passes the budget, the changes of one write together, and moves the cursor each page", async () => {
    const p = await newProject();
    await applyProfileOperations(stores, [
      p.identify("multi", 1000, { email: "multi@example.com" }),
      p.tags("multi", 1001, ["vip"]),
    ]);
    await applyProfileOperations(stores, [p.identify("next", 1000)]);
    await applyProfileOperations(stores, [p.edit("multi", 1002, { plan: "pro" })]);
    const read = await pages(p.id, 100, null, 1);
    expect(read.map((changes) => changes.map(({ type, userId }) => `${type} ${userId}`))).toEqual([
      ["profile.created multi", "tags.changed multi"],
      ["profile.created next"],
      ["profile.changed multi"],
    ]);
    const filtered = await pages(p.id, 100, ["profile.created", "profile.changed"], 1);
    expect(filtered.flat().map(({ type, userId }) => `${type} ${userId}`)).toEqual([
      "profile.created multi",
      "profile.created next",
      "profile.changed multi",
    ]);
  });
});

describe("types", () => {
  it("moves the cursor past what a filter left out, to the horizon, and reads what comes after", async () => {
    const p = await newProject();
    await applyProfileOperations(stores, [p.identify("a", 1000), p.identify("b", 1000)]);
    await feedSettled(db.sql);
    const none = await readChanges(db.sql, p.id, null, 10, ["user.erased"]);
    expect(none.changes).toEqual([]);
    expect(none.caughtUp).toBe(true);
    const everything = await readChanges(db.sql, p.id, null, 10, null);
    expect(everything.changes).toHaveLength(2);
    // The filtered read went through both changes: it reads on from past them.
    expect(positionBefore(everything.changes[1]!.position, none.next)).toBe(true);
    await applyProfileOperations(stores, [p.delete("a", 2000)]);
    const { changes } = await readAll(p.id, none.next);
    expect(changes.map(({ type, userId }) => `${type} ${userId}`)).toEqual(["user.erased a"]);
  });

  it("stops a filtered read at a full page, its cursor at the last change given", async () => {
    const p = await newProject();
    for (const id of ["a", "b", "c"]) await applyProfileOperations(stores, [p.identify(id, 1000)]);
    await feedSettled(db.sql);
    const first = await readChanges(db.sql, p.id, null, 2, ["profile.created"]);
    expect(first.changes.map(({ userId }) => userId)).toEqual(["a", "b"]);
    expect(first.caughtUp).toBe(false);
    expect(first.next).toEqual(first.changes[1]?.position);
    const rest = await readChanges(db.sql, p.id, first.next, 2, ["profile.created"]);
    expect(rest.changes.map(({ userId }) => userId)).toEqual(["c"]);
  });
});

describe("retention", () => {
  it("removes changes applied before the cutoff, from the first on, and records how far", async () => {
    const p = await newProject();
    await applyProfileOperations(stores, [p.identify("old", 1000)]);
    await db.sql`UPDATE changes SET applied_at = now() - interval '8 days' WHERE project_id = ${p.id}`;
    await applyProfileOperations(stores, [p.identify("new", 1000)]);
    // Both below the horizon (other test files' transactions hold it back), so that both can be read and trimmed.
    await feedSettled(db.sql);
    const before = await readChanges(db.sql, p.id, null, 100, null);
    const first = before.changes[0]?.position;
    await trimChanges(db.sql, new Date(Date.now() - 7 * 86_400_000));
    const after = await readChanges(db.sql, p.id, null, 100, null);
    expect(after.changes.map(({ userId }) => userId)).toEqual(["new"]);
    expect(after.trimmedThrough).toEqual(first);
  });
});
