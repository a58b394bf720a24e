import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { profileKeySecrets, recordDeadLetter } from "@cm/db";
import { profileKeysWith, RefusedInput, type UserExport } from "@cm/domain";
import { createTestStack, type TestStack } from "../support/services";
import { sendAccepted } from "../support/users-api";
import { waitFor } from "../support/wait";

let stack: TestStack;
let base: string;

const send = (path: string, body: object, method?: string) =>
  sendAccepted(base, stack.project.authToken, path, body, method);

async function exported(id: string, key = stack.project.apiKey) {
  const response = await fetch(`${base}/api/v2/users/${encodeURIComponent(id)}/export`, {
    headers: { authorization: `Bearer ${key}` },
  });
  return { status: response.status, type: response.headers.get("content-type"), body: await response.json() };
}

async function keyOf(id: string): Promise<string> {
  return profileKeysWith(await profileKeySecrets(stack.db.sql, [stack.project.id]))(stack.project.id, id);
}

/** Events stored as a worker stores them, `count` of them a minute apart, so that the export reads several cursor batches. */
async function storeEvents(id: string, count: number) {
  const key = await keyOf(id);
  await stack.db.sql`
    INSERT INTO events (project_id, user_key, id, name, name_key, data, source, created_at, received_at)
    SELECT ${stack.project.id}, ${key}, gen_random_uuid(), 'Seen ' || g, 'seen' || g, jsonb_build_object('n', g), NULL,
           now() - make_interval(mins => ${count} - g), now()
      FROM generate_series(1, ${count}) AS g`;
}

beforeAll(async () => {
  stack = await createTestStack("user_export");
  base = (await stack.gateway()).url;
  await stack.worker();
  await send("/users/track", { id: "exp-1", email: "exp@example.com", data: { plan: "pro" } });
  await send("/users/tags/edit", { id: "exp-1", add: ["vip"] }, "PUT");
  await send("/events/track", { identity: { id: "exp-1" }, event_name: "Signed up", data: { via: "web" } });
  await send("/users/reidentify", { id: "exp-1", new_id: "exp-1b" }, "PUT");
  await waitFor("every operation applied", async () => {
    const reply = await exported("exp-1b");
    const body = reply.body as UserExport;
    return reply.status === 200 && body.ids.length === 2 && body.events.length === 1 ? true : undefined;
  });
});
afterAll(() => stack.close());

describe("GET /api/v2/users/:id/export", () => {
  it("holds the profile, every linked id, the dead letters and every event, by any of the user's ids", async () => {
    await storeEvents("exp-1b", 1_200);
    await recordDeadLetter(stack.db.sql, {
      projectId: stack.project.id,
      jobId: "1",
      queue: "identify",
      event: { op: "edit", projectId: stack.project.id, key: await keyOf("exp-1"), id: "exp-1", changes: {} },
      error: new RefusedInput("refused for the test"),
    });
    for (const ref of ["exp-1", "exp-1b"]) {
      const reply = await exported(ref);
      expect(reply.status).toBe(200);
      expect(reply.type).toMatch(/^application\/json/);
      const body = reply.body as UserExport;
      expect(body.id).toBe(ref);
      expect(body.profile).toMatchObject({ id: "exp-1b", email: "exp@example.com", tags: ["vip"], event_count: 1_201 });
      expect(body.profile).toEqual(
        await (await fetch(`${base}/api/v2/users/${ref}`, { headers: { authorization: stack.project.apiKey } })).json(),
      );
      expect(body.ids).toEqual(["exp-1", "exp-1b"]);
      expect(body.dead_letters).toEqual([
        {
          queue: "identify",
          operation: expect.objectContaining({ op: "edit", id: "exp-1" }),
          error: "refused for the test",
          created_at: expect.any(String),
        },
      ]);
      expect(body.events).toHaveLength(1_201);
      const times = body.events.map((event) => Date.parse(event.created_at));
      expect(times).toEqual([...times].sort((a, b) => a - b));
      expect(body.events.map((event) => event.event_name)).toContain("Signed up");
    }
  });

  it("holds events of any year the API takes, read back as sent", async () => {
    const times = ["0030-01-01T00:00:00.000Z", "0049-06-01T00:00:00.000Z", "1969-12-31T23:59:59.000Z"];
    await send("/users/track", { id: "exp-old" });
    for (const created_at of times) {
      await send("/events/track", {
        identity: { id: "exp-old" },
        event_name: "Then",
        data: { created_at },
        extras: { created_at },
      });
    }
    const body = await waitFor("the old events stored", async () => {
      const shown = (await exported("exp-old")).body as UserExport;
      return shown.events?.length === times.length && shown.profile?.event_count === times.length ? shown : undefined;
    });
    expect(body.events.map((event) => event.created_at)).toEqual(times);
    expect(body.profile).toMatchObject({ event_count: times.length, last_event_at: times[2] });
  });

  it("never ends as a whole document when an error cuts it short while it streams, and logs it", async () => {
    await send("/users/track", { id: "exp-broken" });
    await waitFor("exp-broken applied", async () => ((await exported("exp-broken")).status === 200 ? true : undefined));
    // A time no reader can show (Postgres' infinity), which no worker writes: the error comes
    // once the answer has begun.
    await stack.db.sql`
      INSERT INTO events (project_id, user_key, id, name, name_key, created_at, received_at)
      VALUES (${stack.project.id}, ${await keyOf("exp-broken")}, gen_random_uuid(), 'Odd', 'odd', now(), 'infinity')`;
    const response = await fetch(`${base}/api/v2/users/exp-broken/export`, {
      headers: { authorization: stack.project.apiKey },
    });
    expect(response.status).toBe(200);
    await expect(response.text()).rejects.toThrow();
    const log = join(inject("logDir"), "user_export.log");
    await waitFor("the failure logged", async () =>
      (await readFile(log, "utf8")).includes("export cut off by an error") ? true : undefined,
    );
  });

  it("answers 404 once the user is deleted, and for a user never seen", async () => {
    await send("/users/track", { id: "exp-2", email: "two@example.com" });
    await waitFor("exp-2 applied", async () => ((await exported("exp-2")).status === 200 ? true : undefined));
    await send("/users/delete", { id: "exp-2" });
    await waitFor("exp-2 erased", async () => ((await exported("exp-2")).status === 404 ? true : undefined));
    expect((await exported("nobody")).status).toBe(404);
  });

  it("answers 401 without a key and 403 without profile:read", async () => {
    expect((await exported("exp-1", "nope")).status).toBe(401);
    expect((await exported("exp-1", await stack.project.keyWith(["campaign:read"]))).status).toBe(403);
  });
});
