import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readChanges } from "@cm/db";
import { addProfileOperationsBatch, profileOperationsQueue, producerConnection } from "@cm/queue";
import { feedSettled } from "../support/change-feed";
import { profileOperations, storedKeyOf } from "../support/profile-operations";
import { createTestProject } from "../support/project";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";

let stack: TestStack;
let base: string;

async function read(id: string, authorization?: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${base}/api/v2/users/${encodeURIComponent(id)}`, {
    headers: { ...(authorization === undefined ? {} : { authorization }), ...headers },
  });
  return { status: response.status, body: await response.json(), revision: response.headers.get("revision") };
}

beforeAll(async () => {
  stack = await createTestStack("profile_read");
  base = (await stack.gateway()).url;
  await stack.worker();
  const response = await fetch(`${base}/api/v2/users/track?auth_token=${stack.project.authToken}`, {
    method: "POST",
    body: JSON.stringify({ id: "reader-1", email: "r@example.com", data: { plan: "pro" } }),
  });
  expect(response.status).toBe(200);
  await waitFor("profile", async () =>
    (await read("reader-1", stack.project.apiKey)).status === 200 ? true : undefined,
  );
});
afterAll(() => stack.close());

describe("GET /api/v2/users/:id", () => {
  it("accepts the raw key and the Bearer form, and shows every topic with its source", async () => {
    const news = await stack.project.topic("News", "subscribed");
    const promos = await stack.project.topic("Promos", "unsubscribed");
    for (const authorization of [stack.project.apiKey, `Bearer ${stack.project.apiKey}`]) {
      const reply = await read("reader-1", authorization);
      expect(reply.status).toBe(200);
      expect(reply.revision).toBe("2023-01-01");
      expect(reply.body).toEqual({
        id: "reader-1",
        email: "r@example.com",
        phone_number: null,
        channels: [],
        data: { plan: "pro" },
        tags: [],
        unsubscribed: false,
        event_count: 0,
        last_event_at: null,
        topics: [
          { id: news, name: "News", status: "subscribed", source: "default" },
          { id: promos, name: "Promos", status: "unsubscribed", source: "default" },
        ],
        created_at: expect.any(String),
        updated_at: expect.any(String),
      });
    }
  });

  it("answers 401 without a valid key and 403 without profile:read", async () => {
    expect(await read("reader-1")).toMatchObject({ status: 401, body: { error: "unauthorized" } });
    expect(await read("reader-1", "Bearer nope")).toMatchObject({ status: 401, body: { error: "unauthorized" } });
    expect(await read("reader-1", stack.project.authToken)).toMatchObject({
      status: 401,
      body: { error: "unauthorized" },
    });
    const readOnly = await stack.project.keyWith(["campaign:read"]);
    expect(await read("reader-1", readOnly)).toMatchObject({ status: 403, body: { error: "forbidden" } });
  });

  it("answers 404 for an unknown profile and for a profile of another project", async () => {
    expect(await read("nobody", stack.project.apiKey)).toMatchObject({ status: 404, body: { error: "not_found" } });
    const other = await createTestProject(stack.db.sql, "other");
    expect(await read("reader-1", other.apiKey)).toMatchObject({ status: 404, body: { error: "not_found" } });
  });

  it("reads a reidentified user's ids as one profile under its new id, and 404s once it is deleted", async () => {
    const connection = producerConnection(stack.config);
    const queue = profileOperationsQueue(connection, stack.config.queuePrefix);
    const p = profileOperations(stack.project.id);
    const now = Date.now();
    try {
      await addProfileOperationsBatch(queue, [
        p.identify("before", now - 3, { email: "before@example.com", data: { plan: "free" } }),
        p.tags("before", now - 2, ["vip"]),
        p.reidentify("before", "after", now - 1),
        p.subscription("before", now, true),
      ]);
      const merged = await waitFor("the reidentify", async () => {
        const reply = await read("before", stack.project.apiKey);
        return reply.status === 200 && reply.body.id === "after" ? reply.body : undefined;
      });
      expect(merged).toMatchObject({ id: "after", email: "before@example.com", tags: ["vip"], unsubscribed: true });
      expect((await read("after", stack.project.apiKey)).body).toEqual(merged);

      await addProfileOperationsBatch(queue, [p.delete("after", now + 1)]);
      await waitFor("the erasure", async () =>
        (await read("before", stack.project.apiKey)).status === 404 ? true : undefined,
      );
      expect((await read("after", stack.project.apiKey)).status).toBe(404);
    } finally {
      await queue.close();
      connection.disconnect();
    }
  });

  it("erases an identify acknowledged before the delete though the client stamped it ahead of the delete", async () => {
    const post = (path: string, body: unknown) =>
      fetch(`${base}/api/v2/users/${path}?auth_token=${stack.project.authToken}`, {
        method: "POST",
        body: JSON.stringify(body),
      }).then((response) => response.status);
    const ahead = new Date(Date.now() + 4 * 60_000).toISOString();
    expect(await post("track", { id: "ahead", data: { plan: "pro" }, extras: { created_at: ahead } })).toBe(200);
    await waitFor("the identify", async () =>
      (await read("ahead", stack.project.apiKey)).status === 200 ? true : undefined,
    );
    expect(await post("delete", { id: "ahead" })).toBe(200);
    await waitFor("the erasure", async () =>
      (await read("ahead", stack.project.apiKey)).status === 404 ? true : undefined,
    );

    // What is sent after the delete is not erased by it.
    expect(await post("track", { id: "ahead", data: { plan: "team" } })).toBe(200);
    const again = await waitFor("the new profile", async () => {
      const reply = await read("ahead", stack.project.apiKey);
      return reply.status === 200 ? reply.body : undefined;
    });
    expect(again.data).toEqual({ plan: "team" });
  });

  it("keeps no address of a user known by email alone once deleted: its row, tombstone, links and events hold keyed hashes, the feed only its erasure notices", async () => {
    const send = (path: string, body: unknown) =>
      fetch(`${base}/api/v2${path}?auth_token=${stack.project.authToken}`, {
        method: "POST",
        body: JSON.stringify(body),
      }).then((response) => response.status);
    const email = "forget-me@example.com";
    const renamed = "forget-me-too@example.com";
    expect(await send("/users/track", { email, data: { plan: "pro" } })).toBe(200);
    expect(await send("/events/track", { identity: { email }, event_name: "Signed up" })).toBe(200);
    await waitFor("the profile and its event", async () => {
      const reply = await read(email, stack.project.apiKey);
      return reply.status === 200 && reply.body.event_count === 1 ? true : undefined;
    });
    const reidentify = await fetch(`${base}/api/v2/users/reidentify?auth_token=${stack.project.authToken}`, {
      method: "PUT",
      body: JSON.stringify({ id: email, new_id: renamed }),
    });
    expect(reidentify.status).toBe(200);
    const shown = await waitFor("the reidentify", async () => {
      const reply = await read(email, stack.project.apiKey);
      return reply.body.id === renamed ? reply.body : undefined;
    });
    expect(shown).toMatchObject({ id: renamed, email, data: { plan: "pro" }, event_count: 1 });

    expect(await send("/users/delete", { email: renamed })).toBe(200);
    await waitFor("the erasure", async () =>
      (await read(email, stack.project.apiKey)).status === 404 ? true : undefined,
    );
    const sql = stack.db.sql;
    const tables = await sql<{ name: string }[]>`
      SELECT format('%I.%I', schemaname, tablename) AS name FROM pg_tables WHERE schemaname = 'public'`;
    // The change feed's erasure notices name the ids erased, so that every copy downstream can be
    // erased too: they are the only rows left holding the address, until CHANGE_RETENTION_DAYS.
    // An erasure's notice is the write that erased the row (migration 025), or a row of its own.
    const holding: string[] = [];
    for (const { name } of tables) {
      const notices =
        name === "public.changes"
          ? `AND whole_row.type <> 'user.erased'
             AND NOT (whole_row.type = 'profile.written' AND (whole_row.before).deleted_t IS DISTINCT FROM (whole_row.after).deleted_t)`
          : "";
      const [row] = await sql.unsafe<{ n: number }[]>(
        `SELECT count(*)::integer AS n FROM ${name} AS whole_row WHERE whole_row::text LIKE '%forget-me%' ${notices}`,
      );
      if ((row?.n ?? 0) > 0) holding.push(`${name}: ${row?.n} rows`);
    }
    expect(holding).toEqual([]);
    await feedSettled(sql);
    const erased = await readChanges(sql, stack.project.id, null, 1000, ["user.erased"]);
    const notices = erased.changes
      .filter(({ userId }) => userId?.startsWith("forget-me"))
      .map(({ userId, change }) => ({ userId, change }))
      .sort((a, b) => ((a.userId ?? "") < (b.userId ?? "") ? -1 : 1));
    expect(notices).toEqual([email, renamed].sort().map((userId) => ({ userId, change: {} })));
    const [oldKey, newKey] = [
      await storedKeyOf(sql, stack.project.id, email),
      await storedKeyOf(sql, stack.project.id, renamed),
    ];
    const rows =
      await sql`SELECT key, external_id, deleted_t IS NOT NULL AS erased FROM profiles WHERE key IN (${oldKey}, ${newKey}) ORDER BY key`;
    expect(rows).toEqual([oldKey, newKey].sort().map((key) => ({ key, external_id: null, erased: true })));
    expect(await sql`SELECT from_key, to_key FROM profile_links WHERE from_key = ${oldKey}`).toEqual([
      { from_key: oldKey, to_key: newKey },
    ]);
    expect(await sql`SELECT key FROM profile_erasures WHERE key = ${newKey}`).toEqual([{ key: newKey }]);
  });

  it("validates the revision header", async () => {
    expect(await read("reader-1", stack.project.apiKey, { revision: "2025-06-01" })).toMatchObject({
      status: 200,
      revision: "2023-01-01",
    });
    const malformed = await read("reader-1", stack.project.apiKey, { revision: "June 2025" });
    expect(malformed.status).toBe(400);
    expect(malformed.body.errors[0].message).toMatch(/revision/);
    expect((await read("reader-1", stack.project.apiKey, { revision: "2001-01-01" })).status).toBe(400);
  });
});
