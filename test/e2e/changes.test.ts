import { trimChanges } from "@cm/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestProject, type TestProject } from "../support/project";
import { createTestStack, type TestStack } from "../support/services";
import { openTransaction } from "../support/transactions";
import { waitFor } from "../support/wait";

// docs/changes.md: GET /api/v2/changes over HTTP, through the real gateway and worker.

let stack: TestStack;
let base: string;

beforeAll(async () => {
  stack = await createTestStack("changes");
  base = (await stack.gateway()).url;
  await stack.worker();
});
afterAll(() => stack.close());

interface Change {
  position: string;
  type: string;
  user_id: string | null;
  applied_at: string;
  change: Record<string, unknown>;
}

async function read(project: TestProject, query: Record<string, string> = {}, key = project.apiKey) {
  const response = await fetch(`${base}/api/v2/changes?${new URLSearchParams(query)}`, {
    headers: { authorization: `Bearer ${key}` },
  });
  return { status: response.status, body: (await response.json()) as { changes: Change[]; next: string } };
}

/** Every change from `after` on, page by page as a consumer reads, until a page comes back empty. */
async function readOn(project: TestProject, after: string | null, query: Record<string, string> = {}) {
  const changes: Change[] = [];
  let cursor = after;
  for (;;) {
    const page = await read(project, { ...query, ...(cursor === null ? {} : { after: cursor }) });
    expect(page.status).toBe(200);
    changes.push(...page.body.changes);
    cursor = page.body.next;
    if (page.body.changes.length === 0) return { changes, cursor };
  }
}

/** Reads on until `done` holds for what was read (the workers apply, and the horizon passes, a moment after). */
async function readUntil(project: TestProject, after: string | null, done: (changes: Change[]) => boolean) {
  const changes: Change[] = [];
  let cursor = after;
  await waitFor("the changes", async () => {
    const page = await readOn(project, cursor);
    changes.push(...page.changes);
    cursor = page.cursor;
    return done(changes) ? true : undefined;
  });
  return { changes, cursor: cursor as string };
}

async function post(project: TestProject, path: string, body: unknown, method = "POST") {
  const response = await fetch(`${base}/api/v2/${path}?auth_token=${project.authToken}`, {
    method,
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
}

const summary = (changes: Change[]) => changes.map(({ type, user_id }) => `${type} ${user_id}`);

describe("GET /api/v2/changes", () => {
  it("serves identifies and events in the order applied, and a reader resuming from its cursor gets each once", async () => {
    const project = await createTestProject(stack.db.sql, "feed order");
    await post(project, "users/track", { id: "ada", email: "ada@example.com", data: { plan: "free" } });
    const first = await readUntil(project, null, (changes) => changes.length >= 1);
    expect(first.changes).toEqual([
      {
        position: expect.any(String),
        type: "profile.created",
        user_id: "ada",
        applied_at: expect.any(String),
        change: { email: "ada@example.com", data: { plan: "free" } },
      },
    ]);
    await post(project, "events/track", { identity: { id: "ada" }, event_name: "Bought", data: { sku: "A-1" } });
    await post(project, "users/edit", { id: "ada", changes: { plan: "pro" } }, "PUT");
    await post(project, "users/tags/edit", { id: "ada", add: ["vip"] }, "PUT");
    const rest = await readUntil(project, first.cursor, (changes) => changes.length >= 3);
    expect(rest.changes.map(({ type, change }) => [type, change])).toEqual(
      expect.arrayContaining([
        ["event.stored", expect.objectContaining({ event_name: "Bought", data: { sku: "A-1" } })],
        ["profile.changed", { data: { plan: "pro" } }],
        ["tags.changed", { added: ["vip"], removed: [] }],
      ]),
    );
    // Read again one change a page, resuming from each position: the same changes, once each.
    const everything = [...first.changes, ...rest.changes];
    const onePerPage: Change[] = [];
    let after: string | null = null;
    for (;;) {
      const page = await read(project, { limit: "1", ...(after === null ? {} : { after }) });
      if (page.body.changes.length === 0) break;
      onePerPage.push(...page.body.changes);
      after = (page.body.changes[0] as Change).position;
    }
    expect(onePerPage).toEqual(everything);
    expect(new Set(everything.map(({ position }) => position)).size).toBe(everything.length);
  });

  it("delivers two changes committed in the reverse order of their positions once each, read over HTTP", async () => {
    const project = await createTestProject(stack.db.sql, "feed reverse");
    await post(project, "users/track", { id: "first" });
    await post(project, "users/track", { id: "second" });
    const start = await readUntil(project, null, (changes) => changes.length >= 2);
    // By the profile's key: on Citus an UPDATE by another column reaches every shard and takes
    // each shard's lock, so that two open ones wait for each other.
    const keys = Object.fromEntries(
      (
        await stack.db.sql<{ external_id: string; key: string }[]>`
          SELECT external_id, key FROM profiles WHERE project_id = ${project.id}`
      ).map((row) => [row.external_id, row.key]),
    );
    const older = await openTransaction(stack.db.sql);
    const younger = await openTransaction(stack.db.sql);
    const tag = (id: string, tag: string) => `UPDATE profiles SET tags = '{"${tag}": {"t": 9999999999999, "v": true}}'
      WHERE project_id = ${project.id} AND key = '${keys[id]}'`;
    await older.run.unsafe(tag("first", "a"));
    await younger.run.unsafe(tag("second", "b"));
    await younger.commit();
    // The younger is committed, but the older still runs: nothing after the cursor can be read yet.
    const polled = await read(project, { after: start.cursor });
    expect(polled.body.changes).toEqual([]);
    await older.commit();
    const { changes } = await readUntil(project, polled.body.next, (read) => read.length >= 2);
    expect(changes.map(({ user_id, change }) => [user_id, change])).toEqual([
      ["first", { added: ["a"], removed: [] }],
      ["second", { added: ["b"], removed: [] }],
    ]);
    expect((await readOn(project, changes[1]?.position ?? null)).changes).toEqual([]);
  });

  it("pages through profiles grown by identifies of 250 KB, bounded in bytes, and the identifies past a profile's bound are kept as dead letters (issue 44)", async () => {
    const project = await createTestProject(stack.db.sql, "feed bytes");
    const start = (await read(project)).body.next;
    // Each identify applied before the next, so that each makes a row of the feed of its own.
    const exported = async (id: string) => {
      const response = await fetch(`${base}/api/v2/users/${id}/export`, {
        headers: { authorization: `Bearer ${project.apiKey}` },
      });
      if (response.status === 404) return { profile: null, dead_letters: [] };
      return (await response.json()) as { profile: { data: object } | null; dead_letters: { error: string }[] };
    };
    for (const id of ["a", "b", "c"])
      for (const k of [1, 2, 3, 4, 5]) {
        await post(project, "users/track", { id, data: { [`k${k}`]: id.repeat(250_000) } });
        await waitFor(`${id}'s identify ${k} applied or refused`, async () => {
          const user = await exported(id);
          return Object.keys(user.profile?.data ?? {}).length + user.dead_letters.length === k ? true : undefined;
        });
      }
    for (const id of ["a", "b", "c"]) {
      const user = await exported(id);
      expect(Object.keys(user.profile?.data ?? {}).sort()).toEqual(["k1", "k2", "k3", "k4"]);
      expect(user.dead_letters.map(({ error }) => error)).toEqual([
        expect.stringContaining("the profile's data would hold more than 1024 KiB as stored"),
      ]);
    }
    // The default page (100), once every change is readable: several pages, none empty before the end, every change once.
    await readUntil(project, start, (changes) => changes.length >= 12);
    const pages: Change[][] = [];
    for (let after = start; ;) {
      const page = await read(project, { after });
      expect(page.status).toBe(200);
      if (page.body.changes.length === 0) break;
      pages.push(page.body.changes);
      after = page.body.next;
    }
    expect(pages.length).toBeGreaterThan(2);
    expect(pages.flat().map(({ type, user_id }) => `${type} ${user_id}`)).toEqual(
      ["a", "b", "c"].flatMap((id) => [`profile.created ${id}`, ...Array(3).fill(`profile.changed ${id}`)]),
    );
  });

  it("reads the types asked for, and reads on from past the others", async () => {
    const project = await createTestProject(stack.db.sql, "feed types");
    await post(project, "users/track", { id: "t1" });
    await post(project, "users/unsubscribe", { id: "t1" });
    await readUntil(project, null, (changes) => changes.length >= 2);
    const optOuts = await read(project, { types: "unsubscribed,resubscribed" });
    expect(summary(optOuts.body.changes)).toEqual(["unsubscribed t1"]);
    const none = await read(project, { types: "user.erased" });
    expect(none.body.changes).toEqual([]);
    await post(project, "users/delete", { id: "t1" });
    const erased = await waitFor("the erasure", async () => {
      const page = await read(project, { types: "user.erased", after: none.body.next });
      return page.body.changes.length > 0 ? page.body.changes : undefined;
    });
    expect(summary(erased)).toEqual(["user.erased t1"]);
  });

  it("answers a waiting reader as soon as a change is applied", async () => {
    const project = await createTestProject(stack.db.sql, "feed wait");
    const { cursor } = await readOn(project, null);
    const waiting = read(project, { after: cursor, wait: "20" });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await post(project, "users/track", { id: "late" });
    // An answer before the wait ends holds the change (one after it would be empty).
    expect(summary((await waiting).body.changes)).toEqual(["profile.created late"]);
  });

  it("leaves nothing of an erased user's data in the feed: only the erasure", async () => {
    const project = await createTestProject(stack.db.sql, "feed erasure");
    await post(project, "users/track", { id: "gone", email: "gone@example.com", data: { secret: "s3cret" } });
    await post(project, "events/track", {
      identity: { id: "gone" },
      event_name: "Visited",
      data: { page: "/private" },
    });
    await post(project, "users/track", { id: "kept", email: "kept@example.com" });
    await readUntil(project, null, (changes) => changes.length >= 3);
    await post(project, "users/delete", { id: "gone" });
    await waitFor("the erasure", async () => {
      const all = await readOn(project, null);
      return all.changes.some(({ type }) => type === "user.erased") ? true : undefined;
    });
    // The whole feed, read anew once the erasure is in it: a read that met the erasure's commit
    // between two of its pages holds the pages before it as they were.
    const { changes } = await readOn(project, null);
    expect(summary(changes)).toEqual(["profile.created kept", "user.erased gone"]);
    const stored = await stack.db.sql`SELECT * FROM changes WHERE project_id = ${project.id}`;
    for (const text of [JSON.stringify(changes), JSON.stringify(stored)]) {
      expect(text).not.toContain("gone@example.com");
      expect(text).not.toContain("s3cret");
      expect(text).not.toContain("/private");
    }
  });

  it("refuses a bad or foreign cursor, bad limit, types or wait (400), and a cursor older than retention (410)", async () => {
    const project = await createTestProject(stack.db.sql, "feed refusals");
    const other = await createTestProject(stack.db.sql, "feed other");
    const foreign = (await read(other)).body.next;
    for (const query of [
      { after: "nonsense" },
      { after: foreign },
      { limit: "0" },
      { limit: "1001" },
      { types: "profile.created,bogus" },
      { wait: "31" },
    ]) {
      const answer = await read(project, query);
      expect(answer.status, JSON.stringify(query)).toBe(400);
      expect(answer.body).toEqual({
        errors: [{ path: expect.stringMatching(/^query\./), message: expect.any(String) }],
      });
    }
    expect((await read(project, { limit: "1000" })).status).toBe(200);

    await post(project, "users/track", { id: "old" });
    const before = (await read(project)).body.next;
    await post(project, "users/track", { id: "older" });
    await readUntil(project, before, (changes) => changes.length >= 1);
    await stack.db.sql`UPDATE changes SET applied_at = now() - interval '8 days' WHERE project_id = ${project.id}`;
    await trimChanges(stack.db.sql, new Date(Date.now() - 7 * 86_400_000));
    const expired = await read(project, { after: before });
    expect(expired.status).toBe(410);
    expect(expired.body).toEqual({ errors: [{ path: "query.after", message: expect.stringContaining("retention") }] });
    // Without a cursor, the feed reads from the oldest change kept.
    expect((await read(project)).status).toBe(200);
  });

  it("answers 401 without a valid key and 403 without changes:read", async () => {
    const project = await createTestProject(stack.db.sql, "feed access");
    const response = await fetch(`${base}/api/v2/changes`);
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ error: "unauthorized" });
    expect((await read(project, {}, "nope")).status).toBe(401);
    const profileReader = await project.keyWith(["profile:read"]);
    expect(await read(project, {}, profileReader)).toMatchObject({ status: 403, body: { error: "forbidden" } });
    expect((await read(project, {}, await project.keyWith(["changes:read"]))).status).toBe(200);
  });
});
