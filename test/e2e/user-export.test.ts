import { readFile } from "node:fs/promises";
import { connect as connectTcp, type Socket } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { profileKeySecrets, recordDeadLetter } from "@cm/db";
import { startGateway } from "@cm/gateway";
import { profileKeysWith, RefusedInput, type UserExport } from "@cm/domain";
import { testLogger } from "../support/logs";
import { createTestProject } from "../support/project";
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

/**
 * Events stored as a worker stores them, `count` of them a minute apart, so that the export reads
 * several pages, each with `padding` characters of data.
 */
async function storeEvents(id: string, count: number, padding = 0) {
  const key = await keyOf(id);
  await stack.db.sql`
    INSERT INTO events (project_id, user_key, id, name, name_key, data, source, created_at, received_at)
    SELECT ${stack.project.id}, ${key}, gen_random_uuid(), 'Seen ' || g, 'seen' || g,
           jsonb_build_object('n', g, 'padding', repeat('x', ${padding})), NULL,
           now() - make_interval(mins => ${count} - g), now()
      FROM generate_series(1, ${count}) AS g`;
}

/**
 * Sockets that ask for `id`'s export and stop reading once its first bytes came: what they were
 * sent fills the socket buffers and the gateway can write no more.
 */
async function stalledExports(url: string, id: string, count: number): Promise<Socket[]> {
  const { port } = new URL(url);
  return Promise.all(
    Array.from({ length: count }, async () => {
      const socket = connectTcp(Number(port), "127.0.0.1");
      socket.on("error", () => {});
      socket.write(
        `GET /api/v2/users/${id}/export HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${stack.project.apiKey}\r\n\r\n`,
      );
      await new Promise((resolve) => socket.once("data", resolve));
      socket.pause();
      return socket;
    }),
  );
}

/** The gateway's queries under way or holding a transaction: connections a reader ties up. */
async function busyGatewayConnections(): Promise<number> {
  const [row] = await stack.db.sql<{ busy: number }[]>`
    SELECT count(*)::integer AS busy FROM pg_stat_activity
     WHERE datname = current_database() AND application_name = 'cm-gateway' AND state <> 'idle'`;
  return (row as { busy: number }).busy;
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

  it("holds no database connection while a client does not read the answer", async () => {
    // 2,550 events of 4 KB: 10 MB a document, more than the socket buffers take.
    await storeEvents("exp-big", 2_550, 4_000);
    await send("/users/track", { id: "exp-big" });
    const other = await createTestProject(stack.db.sql, "other");
    await sendAccepted(base, other.authToken, "/users/track", { id: "other-1" });
    await waitFor("the other project's profile applied", async () => {
      const response = await fetch(`${base}/api/v2/users/other-1`, { headers: { authorization: other.apiKey } });
      return response.status === 200 ? true : undefined;
    });
    // A project whose credentials the gateway has not looked up yet.
    const fresh = await createTestProject(stack.db.sql, "fresh");

    // As many stalled readers as the gateway's pool has connections.
    const sockets = await stalledExports(base, "exp-big", 10);
    try {
      await waitFor("no connection held by the stalled exports", async () =>
        (await busyGatewayConnections()) === 0 ? true : undefined,
      );
      const read = await fetch(`${base}/api/v2/users/other-1`, {
        headers: { authorization: other.apiKey },
        signal: AbortSignal.timeout(15_000),
      });
      expect(read.status).toBe(200);
      const identify = await fetch(`${base}/api/v2/users/track?auth_token=${fresh.authToken}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ id: "fresh-1" }),
        signal: AbortSignal.timeout(15_000),
      });
      expect(identify.status).toBe(200);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
    const whole = (await exported("exp-big")).body as UserExport;
    expect(whole.events).toHaveLength(2_550);
    expect(new Set(whole.events.map((event) => event.id)).size).toBe(2_550);
    expect(whole.events.map((event) => (event.data as { n: number }).n)).toEqual(
      Array.from({ length: 2_550 }, (_, n) => n + 1),
    );
  });

  it("closes the connection of a client that stopped reading for HTTP_STALL_TIMEOUT_MS", async () => {
    await storeEvents("exp-stall", 2_550, 4_000);
    await send("/users/track", { id: "exp-stall" });
    const gateway = await startGateway({ ...stack.config, httpStallTimeoutMs: 1_000 }, testLogger("user_export_stall"));
    const sockets = await stalledExports(gateway.url, "exp-stall", 1);
    try {
      await waitFor("the stalled connection closed", async () => {
        const open = await new Promise<number>((resolve, reject) =>
          gateway.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
        );
        return open === 0 ? true : undefined;
      });
    } finally {
      for (const socket of sockets) socket.destroy();
      await gateway.stop();
    }
  });

  it("answers 401 without a key and 403 without profile:read", async () => {
    expect((await exported("exp-1", "nope")).status).toBe(401);
    expect((await exported("exp-1", await stack.project.keyWith(["campaign:read"]))).status).toBe(403);
  });
});
