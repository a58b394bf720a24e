import { startGateway, type RunningGateway } from "@cm/gateway";
import {
  addEventBatch,
  EVENTS_JOB,
  EVENTS_V2,
  eventsJobData,
  eventsQueues,
  producerConnection,
  type EventsJobData,
  type RedisConnection,
} from "@cm/queue";
import type { Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testLogger } from "../support/logs";
import { createTestProject, type TestProject } from "../support/project";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";

// docs/events.md against the real stack: a gateway, a worker, Postgres and Redis.

const SUCCESS = { status: 200, message: "Success." };

let stack: TestStack;
let base: string;
let redis: RedisConnection;
/** Every shard of the events queue; jobs a test queues itself go to the first. */
let queues: Queue<EventsJobData>[];
let queue: Queue<EventsJobData>;

beforeAll(async () => {
  stack = await createTestStack("events", { eventDedupWindowS: 300 });
  base = (await stack.gateway()).url;
  await stack.worker();
  redis = producerConnection(stack.config);
  queues = eventsQueues(redis, stack.config.queuePrefix, stack.config.intakeQueueShards);
  queue = queues[0]!;
});
afterAll(async () => {
  await Promise.all(queues.map((shard) => shard.close()));
  redis.disconnect();
  await stack.close();
});

async function post(project: TestProject, path: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${base}/api/v2${path}?auth_token=${encodeURIComponent(project.authToken)}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json(), detail: response.headers.get("x-error-detail") };
}

const track = (project: TestProject, body: unknown, headers: Record<string, string> = {}) =>
  post(project, "/events/track", body, headers);

async function get(project: TestProject, path: string) {
  const response = await fetch(`${base}/api/v2${path}`, { headers: { authorization: project.apiKey } });
  return { status: response.status, body: await response.json() };
}

interface Shown {
  id: string;
  event_name: string;
  data: Record<string, unknown> | null;
  source: string | null;
  created_at: string;
  received_at: string;
}

const events = async (project: TestProject, user: string, query = ""): Promise<Shown[]> =>
  (await get(project, `/users/${encodeURIComponent(user)}/events${query}`)).body.data;

/** Waits until the user has `count` events (and the queue is empty, so that none is still coming). */
async function eventsOnceStored(project: TestProject, user: string, count: number): Promise<Shown[]> {
  return waitFor(`${count} events of ${user}`, async () => {
    const shown = await events(project, user);
    const pending = await Promise.all(queues.map((shard) => shard.getJobCounts("waiting", "active", "delayed")));
    return shown.length === count && pending.every((counts) => counts.waiting + counts.active === 0)
      ? shown
      : undefined;
  });
}

describe("POST /api/v2/events/track", () => {
  it("answers Success once queued, on both paths, with every credential placement, and stores the event", async () => {
    const project = await createTestProject(stack.db.sql, "track");
    expect(
      await track(project, { identity: { id: "u1" }, event_name: "Signed up", data: { plan: "pro" } }),
    ).toMatchObject({ status: 200, body: SUCCESS });
    const json = await fetch(`${base}/api/v2/events/track.json`, {
      method: "POST",
      body: JSON.stringify({ auth_token: project.authToken, identity: { id: "u1" }, event_name: "Upgraded" }),
    });
    expect([json.status, await json.json()]).toEqual([200, SUCCESS]);
    const form = await fetch(`${base}/api/v2/events/track?tracking_api_key=${project.authToken}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "identity=%7B%22id%22%3A%22u1%22%7D&event_name=Visited+site&data%5Bpath%5D=%2Fpricing",
    });
    expect(form.status).toBe(200);

    const shown = await eventsOnceStored(project, "u1", 3);
    expect(shown.map((event) => event.event_name).sort()).toEqual(["Signed up", "Upgraded", "Visited site"]);
    expect(shown.find((event) => event.event_name === "Signed up")).toMatchObject({
      data: { plan: "pro" },
      source: null,
    });
    expect(shown.find((event) => event.event_name === "Upgraded")?.data).toBeNull();
    expect(shown.find((event) => event.event_name === "Visited site")?.data).toEqual({ path: "/pricing" });
  });

  it("answers 400 with the reason, 401 without a valid token, and the heartbeat", async () => {
    const project = await createTestProject(stack.db.sql, "refused");
    for (const [body, reason] of [
      [{ event_name: "x" }, /identity/],
      [{ identity: {}, event_name: "x" }, /id or email/],
      [{ identity: { id: "u" } }, /event_name/],
      [{ identity: { id: "u" }, event_name: "" }, /event_name/],
      [{ identity: { id: "u" }, event_name: "x".repeat(256) }, /event_name/],
      [{ identity: { email: "not an email" }, event_name: "x" }, /email/],
      [{ identity: { id: "u" }, event_name: "x", data: [1] }, /data/],
      [{ identity: { id: "u" }, event_name: "x", extras: { created_at: "yesterday" } }, /created_at/],
    ] as const) {
      const answer = await track(project, body);
      expect(answer, JSON.stringify(body)).toMatchObject({
        status: 400,
        body: { status: 400, message: "Bad Request" },
      });
      expect(answer.detail).toMatch(reason);
    }
    const tooLong = await track(
      project,
      { identity: { id: "u" }, event_name: "x" },
      { "idempotency-key": "k".repeat(256) },
    );
    expect(tooLong.detail).toMatch(/Idempotency-Key/);
    const unauthorized = await fetch(`${base}/api/v2/events/track?auth_token=nope`, {
      method: "POST",
      body: JSON.stringify({ identity: { id: "u" }, event_name: "x" }),
    });
    expect(unauthorized.status).toBe(401);
    const heartbeat = await fetch(`${base}/api/v2/heartbeat`);
    expect([heartbeat.status, await heartbeat.json()]).toEqual([200, SUCCESS]);
    const unknown = await fetch(`${base}/api/v2/no/such/path`);
    expect([unknown.status, await unknown.json()]).toEqual([
      404,
      { status: 404, message: "The resource doesn't exist" },
    ]);
  });

  it("lets a web page track, preflight first", async () => {
    const preflight = await fetch(`${base}/api/v2/events/track`, {
      method: "OPTIONS",
      headers: { origin: "https://shop.example", "access-control-request-method": "POST" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("*");
  });
});

describe("profiles and events", () => {
  it("creates the profile of an unknown user (email only: the email is its id), and leaves a known profile's row alone", async () => {
    const project = await createTestProject(stack.db.sql, "creates");
    await track(project, { identity: { email: "new@example.com" }, event_name: "Visited site" });
    const created = await waitFor("the created profile", async () => {
      const read = await get(project, "/users/new%40example.com");
      return read.status === 200 ? read.body : undefined;
    });
    expect(created).toMatchObject({ id: "new@example.com", email: "new@example.com", event_count: 1 });

    await post(project, "/users/track", { id: "known", data: { plan: "pro" } });
    await waitFor("the identify", async () => ((await get(project, "/users/known")).status === 200 ? true : undefined));
    const [before] = await stack.db
      .sql`SELECT xmin::text AS xmin FROM profiles WHERE project_id = ${project.id} AND key = 'i:known'`;
    await track(project, { identity: { id: "known", email: "known@example.com" }, event_name: "Paid" });
    await eventsOnceStored(project, "known", 1);
    const [after] = await stack.db
      .sql`SELECT xmin::text AS xmin FROM profiles WHERE project_id = ${project.id} AND key = 'i:known'`;
    expect(after?.xmin).toBe(before?.xmin);
    const profile = (await get(project, "/users/known")).body;
    expect(profile).toMatchObject({ email: null, data: { plan: "pro" }, event_count: 1 });
    expect(Date.parse(profile.last_event_at)).toBeGreaterThan(0);
  });
});

describe("stored once", () => {
  it("applies Vero's rule: same user, name (case, spaces, _ and - ignored), and data, else check_id, within the window", async () => {
    const project = await createTestProject(stack.db.sql, "dedup");
    const sent = [
      { identity: { id: "d" }, event_name: "Viewed Product", data: { sku: 1 } },
      { identity: { id: "d" }, event_name: "viewed_product", data: { sku: 1 } },
      { identity: { id: "d" }, event_name: " VIEWED-product ", data: { sku: 1 } },
      { identity: { id: "d" }, event_name: "Viewed Product", data: { sku: 2 } },
      { identity: { id: "d" }, event_name: "Checked out", extras: { check_id: 1580602989000000 } },
      { identity: { id: "d" }, event_name: "Checked out", extras: { check_id: 1580602989000000 } },
      { identity: { id: "d" }, event_name: "Checked out", extras: { check_id: 1580602989000001 } },
      { identity: { id: "d" }, event_name: "Logged in" },
      { identity: { id: "d" }, event_name: "Logged in" },
      { identity: { id: "other" }, event_name: "Logged in" },
    ];
    for (const body of sent) expect((await track(project, body)).status).toBe(200);
    const shown = await eventsOnceStored(project, "d", 5);
    // Of events that are one, the first a worker stores is kept, as sent: jobs of consecutive
    // requests may be applied in either order.
    const product = (sku: number) => shown.filter((event) => (event.data as { sku?: number } | null)?.sku === sku);
    expect(product(1)).toHaveLength(1);
    expect(["Viewed Product", "viewed_product", " VIEWED-product "]).toContain(product(1)[0]?.event_name);
    expect(product(2).map((event) => event.event_name)).toEqual(["Viewed Product"]);
    expect(
      shown
        .map((event) => event.event_name)
        .filter((name) => !/product/i.test(name))
        .sort(),
    ).toEqual(["Checked out", "Checked out", "Logged in"]);
    expect(await eventsOnceStored(project, "other", 1)).toHaveLength(1);
  });

  it("makes events with one Idempotency-Key or extras.message_id one, across two gateways", async () => {
    const project = await createTestProject(stack.db.sql, "idempotency");
    const second: RunningGateway = await startGateway({ ...stack.config, port: 0 }, testLogger("events-second"));
    try {
      const bodies = [0, 1, 2, 3].map((n) => ({ identity: { id: "i" }, event_name: "Order", data: { n } }));
      const sends = bodies.flatMap((body, n) =>
        [base, second.url].map((url) =>
          fetch(`${url}/api/v2/events/track?auth_token=${project.authToken}`, {
            method: "POST",
            headers: { "idempotency-key": `order-${n % 2}` },
            body: JSON.stringify(body),
          }).then((response) => response.status),
        ),
      );
      const messageIds = [0, 1].map((n) =>
        track(project, {
          identity: { id: "i" },
          event_name: "Refund",
          data: { n },
          extras: { message_id: "refund-1" },
        }),
      );
      expect(await Promise.all(sends)).toEqual(Array(8).fill(200));
      expect((await Promise.all(messageIds)).map((answer) => answer.status)).toEqual([200, 200]);
      const shown = await eventsOnceStored(project, "i", 3);
      expect(shown.map((event) => event.event_name).sort()).toEqual(["Order", "Order", "Refund"]);
    } finally {
      await second.stop();
    }
  });

  it("stores nothing new when a job is applied again", async () => {
    const project = await createTestProject(stack.db.sql, "replayed-job");
    await track(project, { identity: { id: "r" }, event_name: "Once" });
    const [stored] = await eventsOnceStored(project, "r", 1);
    const [row] = await stack.db.sql`
      SELECT user_key, name, (extract(epoch FROM created_at) * 1000)::bigint AS t,
             (extract(epoch FROM received_at) * 1000)::bigint AS received
        FROM events WHERE id = ${stored?.id ?? ""}::uuid`;
    const again = {
      projectId: project.id,
      key: row?.user_key,
      userId: "r",
      eventId: stored?.id as string,
      name: row?.name,
      data: null,
      t: Number(row?.t),
      receivedAt: Number(row?.received),
    };
    await addEventBatch(queue, [again]);
    await addEventBatch(queue, [{ ...again, dedupKey: "k", dedupWindowMs: 1 }]);
    expect(await eventsOnceStored(project, "r", 1)).toHaveLength(1);
  });

  it("stores the events of a version 2 job, which names users by their ids alone, and makes their profiles", async () => {
    const project = await createTestProject(stack.db.sql, "version-2");
    const now = Date.now();
    const event = (name: string, dedupKey?: string) => ({
      projectId: project.id,
      key: "i:v2-user",
      userId: "v2-user",
      email: "v2@example.com",
      eventId: crypto.randomUUID(),
      name,
      data: { plan: "pro" },
      t: now,
      receivedAt: now,
      ...(dedupKey !== undefined && { dedupKey, dedupWindowMs: 60_000 }),
    });
    const data = eventsJobData([event("Signed up"), event("Paid", "pay-1"), event("Paid", "pay-1")], 2);
    expect(data).toMatchObject({ ...EVENTS_V2, acceptedAt: expect.any(Number) });
    expect(JSON.stringify(data)).not.toContain('"key"');
    await queue.add(EVENTS_JOB, data);
    const shown = await eventsOnceStored(project, "v2-user", 2);
    expect(shown.map((stored) => stored.event_name).sort()).toEqual(["Paid", "Signed up"]);
    expect(await get(project, "/users/v2-user")).toMatchObject({
      status: 200,
      body: { id: "v2-user", email: "v2@example.com" },
    });
  });
});

describe("reading a user's events", () => {
  it("pages newest first with a cursor, filters by normalised name and time, and follows a reidentify", async () => {
    const project = await createTestProject(stack.db.sql, "read");
    const at = (minutes: number) => new Date(Date.UTC(2026, 0, 1, 12, minutes)).toISOString();
    for (let n = 0; n < 7; n++) {
      const body = {
        identity: { id: "old" },
        event_name: n % 2 ? "Page View" : "Click",
        data: { n },
        extras: { created_at: at(n) },
      };
      expect((await track(project, body)).status).toBe(200);
    }
    await eventsOnceStored(project, "old", 7);
    await post(project, "/users/track", { id: "old" });
    expect(
      (
        await fetch(`${base}/api/v2/users/reidentify?auth_token=${project.authToken}`, {
          method: "PUT",
          body: JSON.stringify({ id: "old", new_id: "new" }),
        })
      ).status,
    ).toBe(200);
    const underNew = await eventsOnceStored(project, "new", 7);
    expect(underNew.map((event) => event.data?.n)).toEqual([6, 5, 4, 3, 2, 1, 0]);

    const first = (await get(project, "/users/new/events?limit=3")).body;
    expect(first.data.map((event: Shown) => event.data?.n)).toEqual([6, 5, 4]);
    const second = (await get(project, `/users/new/events?limit=3&cursor=${first.next_cursor}`)).body;
    expect(second.data.map((event: Shown) => event.data?.n)).toEqual([3, 2, 1]);
    const last = (await get(project, `/users/new/events?limit=3&cursor=${second.next_cursor}`)).body;
    expect(last).toMatchObject({ data: [{ data: { n: 0 } }], next_cursor: null });

    expect((await events(project, "new", "?event_name=page_view")).map((event) => event.data?.n)).toEqual([5, 3, 1]);
    const range = `?since=${encodeURIComponent(at(2))}&until=${encodeURIComponent(at(4))}`;
    expect((await events(project, "new", range)).map((event) => event.data?.n)).toEqual([3, 2]);
    expect((await get(project, "/users/new/events?limit=0")).status).toBe(422);
    expect((await get(project, "/users/new/events?cursor=nope")).status).toBe(422);
    expect(await events(project, "nobody")).toEqual([]);
  });
});

describe("times of any year the API takes", () => {
  it("reads back as sent, and pages through years before 1000 and before 1970, each event once", async () => {
    const project = await createTestProject(stack.db.sql, "years");
    const times = [
      "0001-01-01T00:00:00.000Z",
      "0030-06-15T12:00:00.000Z",
      "0049-01-01T00:00:00.000Z",
      "0999-12-31T23:59:59.999Z",
      "1969-12-31T23:59:59.000Z",
      "2026-01-01T00:00:00.000Z",
    ];
    await post(project, "/users/track", { id: "y" });
    for (const created_at of times) {
      const body = { identity: { id: "y" }, event_name: "Then", data: { created_at }, extras: { created_at } };
      expect((await track(project, body)).status).toBe(200);
    }
    const stored = await eventsOnceStored(project, "y", times.length);
    expect(stored.map((event) => event.created_at)).toEqual([...times].reverse());

    const paged: string[] = [];
    let cursor: string | null = "";
    for (let page = 0; cursor !== null && page <= times.length; page++) {
      const reply = await get(project, `/users/y/events?limit=1${cursor === "" ? "" : `&cursor=${cursor}`}`);
      expect(reply.status).toBe(200);
      paged.push(...reply.body.data.map((event: Shown) => event.created_at));
      cursor = reply.body.next_cursor;
    }
    expect(paged).toEqual([...times].reverse());
    const range = `?since=${times[1]}&until=${times[4]}`;
    expect((await events(project, "y", range)).map((event) => event.created_at)).toEqual(times.slice(1, 4).reverse());
    expect((await get(project, "/users/y")).body).toMatchObject({ event_count: times.length, last_event_at: times[5] });
  });

  it("refuses a time outside years 0001 to 9999 with 400, in the body and in the query", async () => {
    const project = await createTestProject(stack.db.sql, "bad-years");
    for (const created_at of ["0000-12-31T23:59:59Z", "0001-01-01T00:30:00+01:00", "253402300800"]) {
      const reply = await track(project, { identity: { id: "y" }, event_name: "Then", extras: { created_at } });
      expect(reply).toMatchObject({ status: 400, detail: expect.stringMatching(/extras\.created_at must be .*0001/) });
    }
    for (const query of ["since=0000-01-01T00:00:00Z", "until=0000-06-01T00:00:00Z", "event_name=a%00b"]) {
      const reply = await get(project, `/users/y/events?${query}`);
      expect(reply.status).toBe(422);
      expect(reply.body.errors[0].message).toMatch(/^(since|until|event_name) must/);
    }
  });
});

describe("erasure", () => {
  it("erases a deleted user's events, linked ids' and queued ones included, and keeps what came after", async () => {
    const project = await createTestProject(stack.db.sql, "erasure");
    await post(project, "/users/track", { id: "a" });
    await track(project, { identity: { id: "a" }, event_name: "Before" });
    await eventsOnceStored(project, "a", 1);
    await fetch(`${base}/api/v2/users/reidentify?auth_token=${project.authToken}`, {
      method: "PUT",
      body: JSON.stringify({ id: "a", new_id: "b" }),
    });
    await track(project, { identity: { id: "b" }, event_name: "Linked" });
    await eventsOnceStored(project, "b", 2);
    // Accepted before the delete, stored after it.
    const deleteAt = Date.now() + 50;
    const queued = {
      projectId: project.id,
      key: "i:b",
      userId: "b",
      eventId: crypto.randomUUID(),
      name: "Queued",
      data: null,
      t: deleteAt - 10,
      receivedAt: deleteAt - 10,
    };
    while (Date.now() <= deleteAt) await new Promise((resolve) => setTimeout(resolve, 10));
    expect((await post(project, "/users/delete", { id: "b" })).status).toBe(200);
    await waitFor("the erasure", async () => ((await get(project, "/users/b")).status === 404 ? true : undefined));
    await addEventBatch(queue, [queued]);
    await eventsOnceStored(project, "b", 0);
    expect(await stack.db.sql`SELECT 1 FROM events WHERE project_id = ${project.id}`).toHaveLength(0);

    await track(project, { identity: { id: "b" }, event_name: "After" });
    expect((await eventsOnceStored(project, "b", 1)).map((event) => event.event_name)).toEqual(["After"]);
  });

  it("takes the erased events' deduplication keys with them: the same events sent after the delete are stored, once", async () => {
    const project = await createTestProject(stack.db.sql, "erased-keys");
    const sendAll = async () => {
      const answers = [
        await track(project, { identity: { id: "x" }, event_name: "Signed up" }),
        await track(project, { identity: { id: "x" }, event_name: "Paid", extras: { message_id: "pay-1" } }),
        await track(project, { identity: { id: "x" }, event_name: "Shipped" }, { "idempotency-key": "ship-1" }),
      ];
      expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
    };
    await sendAll();
    await eventsOnceStored(project, "x", 3);
    expect((await post(project, "/users/delete", { id: "x" })).status).toBe(200);
    await waitFor("the erasure", async () => ((await events(project, "x")).length === 0 ? true : undefined));

    await sendAll();
    await sendAll();
    const shown = await eventsOnceStored(project, "x", 3);
    expect(shown.map((event) => event.event_name).sort()).toEqual(["Paid", "Shipped", "Signed up"]);
  });
});

describe("job kinds", () => {
  it("leaves a job of a kind or version the worker does not know alone: neither applied nor failed", async () => {
    const job = await queue.add(EVENTS_JOB, { kind: "events", v: 3 as 2, events: [], acceptedAt: Date.now() });
    await waitFor("the job left alone", async () => ((await job.getState()) === "delayed" ? true : undefined));
    expect(await queue.getFailedCount()).toBe(0);
    await job.remove();
  });
});
