import { deflateSync, gzipSync } from "node:zlib";
import { Analytics } from "@segment/analytics-node";
import RudderAnalytics from "@rudderstack/rudder-sdk-node";
import type { RunningGateway } from "@cm/gateway";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestProject, type TestProject } from "../support/project";
import { drained } from "../support/queue";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";

// The tracking spec's /v1 API (docs/tracking-spec.md) as Segment's and RudderStack's own Node
// SDKs call it, unchanged but for their host, against a gateway, a worker, Postgres and Redis.

let stack: TestStack;
let gateway: RunningGateway;
let base: string;

beforeAll(async () => {
  stack = await createTestStack("tracking_spec");
  gateway = await stack.gateway();
  base = gateway.url;
  await stack.worker();
});
afterAll(() => stack.close());

const allApplied = () => drained([...gateway.deps.profileOperationsQueues, ...gateway.deps.eventsQueues]);

async function read(project: TestProject, path: string) {
  const response = await fetch(`${base}/api/v2${path}`, { headers: { authorization: project.apiKey } });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** The profile once `done` holds for it. */
function profileWhen(project: TestProject, id: string, done: (profile: Record<string, unknown>) => boolean) {
  return waitFor(`profile ${id}`, async () => {
    const { status, body } = await read(project, `/users/${encodeURIComponent(id)}`);
    return status === 200 && done(body) ? body : undefined;
  });
}

interface UserEvent {
  event_name: string;
  data: unknown;
  created_at: string;
}

async function eventsOf(project: TestProject, id: string): Promise<UserEvent[]> {
  const { body } = await read(project, `/users/${encodeURIComponent(id)}/events`);
  const order = (event: UserEvent) => `${event.event_name} ${JSON.stringify(event.data)}`;
  return (body.data as UserEvent[]).toSorted((a, b) => order(a).localeCompare(order(b)));
}

/** What Segment's SDK sent and was answered: each request's body and headers, and each answer's status. */
interface SegmentExchange {
  requests: { body: string; headers: Record<string, string> }[];
  statuses: number[];
}

/** analytics-node pointed at the gateway: `calls` made, then flushed in one batch and closed. */
async function withSegment(writeKey: string, calls: (analytics: Analytics) => void): Promise<SegmentExchange> {
  const analytics = new Analytics({ writeKey, host: base, flushAt: 100, flushInterval: 60_000, maxRetries: 0 });
  const exchange: SegmentExchange = { requests: [], statuses: [] };
  analytics.on("http_request", ({ body, headers }) => exchange.requests.push({ body, headers }));
  analytics.on("http_response", ({ status }) => exchange.statuses.push(status));
  calls(analytics);
  await analytics.closeAndFlush();
  return exchange;
}

type Rudder = InstanceType<typeof RudderAnalytics>;

/** rudder-sdk-node pointed at the gateway (gzip on, its default): `calls` made, then flushed; the statuses of the requests it saw fail. */
async function withRudder(writeKey: string, calls: (rudder: Rudder) => void): Promise<unknown[]> {
  const failures: unknown[] = [];
  const rudder = new RudderAnalytics(writeKey, {
    dataPlaneUrl: base,
    flushAt: 100,
    flushInterval: 60_000,
    retryCount: 0,
    logLevel: "none",
    // Its first call is sent on its own at once: a failure of it reaches no flush's promise.
    errorHandler: (error: { response?: { status?: number } }) => failures.push(error.response?.status),
  });
  calls(rudder);
  await rudder.flush();
  return failures;
}

const basic = (writeKey: string) => `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`;

async function post(path: string, body: string | Buffer, headers: Record<string, string>) {
  const response = await fetch(`${base}${path}`, { method: "POST", headers, body });
  return {
    status: response.status,
    body: (await response.json()) as Record<string, unknown>,
    headers: response.headers,
  };
}

/** Every call type of the spec, as an app instrumented with either SDK makes them. */
function everyCall(user: string, anonymous: string, newUser: string) {
  const context = {
    locale: "fr-FR",
    timezone: "Europe/Paris",
    userAgent: "Mozilla/5.0 (iPhone)",
    device: { token: `apns-${user}` },
    os: { name: "iOS" },
  };
  return {
    identify: { userId: user, traits: { email: `${user}@example.com`, plan: "pro" }, context },
    track: { userId: user, event: "Order Completed", properties: { total: 30, sku: "A-1" } },
    page: { userId: user, category: "Docs", name: "Home", properties: { url: "https://example.com/docs" } },
    screen: { userId: user, name: "Settings", properties: { tab: "privacy" } },
    group: { userId: user, groupId: "g-1", traits: { name: "Initech", plan: "team" } },
    anonymous: { anonymousId: anonymous, traits: { plan: "trial" } },
    alias: { previousId: anonymous, userId: newUser },
  };
}

/** What every call type leaves, read through the API. */
async function expectEveryCallStored(project: TestProject, user: string, newUser: string) {
  const profile = await profileWhen(
    project,
    user,
    (p) => p.event_count === 3 && (p.data as { group?: unknown }).group !== undefined,
  );
  expect(profile).toMatchObject({
    email: `${user}@example.com`,
    channels: [{ type: "push", address: `apns-${user}`, platform: "iOS" }],
    data: {
      plan: "pro",
      language: "fr-FR",
      timezone: "Europe/Paris",
      userAgent: "Mozilla/5.0 (iPhone)",
      group: { name: "Initech", plan: "team", id: "g-1" },
    },
  });
  expect(await eventsOf(project, user)).toEqual([
    expect.objectContaining({ event_name: "Order Completed", data: { total: 30, sku: "A-1" } }),
    // Segment's SDK also writes the category into the properties.
    expect.objectContaining({
      event_name: "Viewed Docs Home Page",
      data: expect.objectContaining({ url: "https://example.com/docs" }),
    }),
    expect.objectContaining({ event_name: "Viewed Settings Screen", data: { tab: "privacy" } }),
  ]);
  // The anonymous visitor's profile, aliased, is the new user's.
  expect(await profileWhen(project, newUser, (p) => (p.data as { plan?: unknown }).plan === "trial")).toMatchObject({
    id: newUser,
  });
}

describe("@segment/analytics-node pointed at the gateway", () => {
  it("sends every call type to /v1/batch, answered 200, each stored as the docs' table says", async () => {
    const project = await createTestProject(stack.db.sql, "Segment SDK");
    const calls = everyCall("seg-1", "seg-anon", "seg-2");
    const sent = await withSegment(project.authToken, (analytics) => {
      analytics.identify(calls.identify);
      analytics.track(calls.track);
      analytics.page(calls.page);
      analytics.screen(calls.screen);
      analytics.group(calls.group);
      analytics.identify(calls.anonymous);
      analytics.alias(calls.alias);
    });
    expect(sent.statuses).toEqual([200]);
    expect(sent.requests[0]?.headers.Authorization).toBe(basic(project.authToken));
    await expectEveryCallStored(project, "seg-1", "seg-2");
  });

  it("stores each event of a batch sent twice once", async () => {
    const project = await createTestProject(stack.db.sql, "Segment twice");
    const sent = await withSegment(project.authToken, (analytics) => {
      analytics.track({ userId: "twice", event: "Opened", properties: { n: 1 } });
      analytics.track({ userId: "twice", event: "Opened", properties: { n: 2 } });
      analytics.page({ userId: "twice", name: "Home" });
    });
    expect(sent.statuses).toEqual([200]);
    // The SDK resends a whole batch after a timeout: the same body, as it sent it.
    const [request] = sent.requests;
    if (request === undefined) throw new Error("nothing was sent");
    const again = await post("/v1/batch", request.body, request.headers);
    expect(again).toMatchObject({ status: 200, body: { success: true } });
    await allApplied();
    expect((await eventsOf(project, "twice")).map((event) => [event.event_name, event.data])).toEqual([
      ["Opened", { n: 1 }],
      ["Opened", { n: 2 }],
      ["Viewed Home Page", {}],
    ]);
  });

  it("keeps the messages of a batch it can read when one is refused, and the SDK sees the batch delivered", async () => {
    const project = await createTestProject(stack.db.sql, "Segment mixed");
    const sent = await withSegment(project.authToken, (analytics) => {
      analytics.identify({ userId: "mixed", traits: { email: "not an email", plan: "pro" } });
      analytics.track({ userId: "mixed", event: "Kept" });
    });
    expect(sent.statuses).toEqual([200]);
    const profile = await profileWhen(project, "mixed", (p) => p.event_count === 1);
    expect(profile.email).toBeNull();
    expect(profile.data).toEqual({});
    expect((await eventsOf(project, "mixed")).map((event) => event.event_name)).toEqual(["Kept"]);
  });

  it("is answered 401 for a wrong write key, and nothing is stored", async () => {
    const project = await createTestProject(stack.db.sql, "Segment wrong key");
    const sent = await withSegment(`${project.authToken}x`, (analytics) => {
      analytics.identify({ userId: "wrong-key", traits: { plan: "pro" } });
      analytics.track({ userId: "wrong-key", event: "Opened" });
    });
    expect(sent.statuses).toEqual([401]);
    await allApplied();
    expect((await read(project, "/users/wrong-key")).status).toBe(404);
  });
});

describe("@rudderstack/rudder-sdk-node pointed at the gateway", () => {
  it("sends every call type gzipped to /v1/batch, each stored as the docs' table says", async () => {
    const project = await createTestProject(stack.db.sql, "RudderStack SDK");
    const calls = everyCall("rud-1", "rud-anon", "rud-2");
    const errors = await withRudder(project.authToken, (rudder) => {
      rudder.identify(calls.identify);
      rudder.track(calls.track);
      rudder.page(calls.page);
      rudder.screen(calls.screen);
      rudder.group(calls.group);
      rudder.identify(calls.anonymous);
      rudder.alias(calls.alias);
    });
    expect(errors).toEqual([]);
    await expectEveryCallStored(project, "rud-1", "rud-2");
  });

  it("stores an event its messageId names once, however often it is sent", async () => {
    const project = await createTestProject(stack.db.sql, "RudderStack twice");
    const track = { userId: "twice", event: "Opened", messageId: "rudder-message-1" };
    expect(await withRudder(project.authToken, (rudder) => rudder.track(track))).toEqual([]);
    expect(await withRudder(project.authToken, (rudder) => rudder.track(track))).toEqual([]);
    await allApplied();
    expect((await eventsOf(project, "twice")).map((event) => event.event_name)).toEqual(["Opened"]);
  });

  it("is refused for a wrong write key, and nothing is stored", async () => {
    const project = await createTestProject(stack.db.sql, "RudderStack wrong key");
    const errors = await withRudder(`${project.authToken}x`, (rudder) => {
      rudder.identify({ userId: "wrong-key", traits: { plan: "pro" } });
    });
    expect(errors).toEqual([401]);
    await allApplied();
    expect((await read(project, "/users/wrong-key")).status).toBe(404);
  });
});

describe("the /v1 routes", () => {
  it("answers a batch with a message it cannot read 200, listing it, and stores the others", async () => {
    const project = await createTestProject(stack.db.sql, "Refused messages");
    const batch = [
      { type: "track", userId: "listed", event: "Kept", messageId: "m-1" },
      { type: "track", userId: "listed", messageId: "m-2" },
      { type: "identify", userId: "listed", traits: { email: "nope" } },
      "not a message",
      { type: "track", userId: "listed", messageId: "x".repeat(200_000) },
    ];
    const answer = await post("/v1/batch", JSON.stringify({ batch, sentAt: new Date() }), {
      authorization: basic(project.authToken),
    });
    expect(answer).toMatchObject({
      status: 200,
      body: {
        success: true,
        refused: [
          { index: 1, messageId: "m-2", reason: "event is required and must be a string of 1 to 255 characters" },
          { index: 2, reason: "traits.email must be an email address" },
          { index: 3, reason: "a message must be a JSON object" },
          // Echoed no longer than an id the API keeps.
          { index: 4, messageId: "x".repeat(255), reason: expect.stringMatching(/messageId/) },
        ],
      },
    });
    await profileWhen(project, "listed", (p) => p.event_count === 1);
  });

  it("reads gzip and deflate bodies, a write key in the body, and the single calls", async () => {
    const project = await createTestProject(stack.db.sql, "Encodings");
    const batch = (event: string) => JSON.stringify({ batch: [{ type: "track", userId: "enc", event }] });
    expect(
      await post("/v1/batch", gzipSync(batch("Gzipped")), {
        authorization: basic(project.authToken),
        "content-encoding": "gzip",
      }),
    ).toMatchObject({ status: 200, body: { success: true } });
    expect(
      await post("/v1/batch", deflateSync(batch("Deflated")), {
        authorization: basic(project.authToken),
        "content-encoding": "deflate",
      }),
    ).toMatchObject({ status: 200 });
    const single = JSON.stringify({
      writeKey: project.authToken,
      userId: "enc",
      event: "Single",
      properties: { a: 1 },
    });
    expect(await post("/v1/track", single, { "content-type": "text/plain" })).toMatchObject({
      status: 200,
      body: { success: true },
    });
    expect(
      await post("/v1/t", JSON.stringify({ userId: "enc", event: "Short path" }), {
        authorization: basic(project.authToken),
      }),
    ).toMatchObject({ status: 200 });
    expect(
      await post("/v1/identify", JSON.stringify({ userId: "enc", traits: { email: "x" } }), {
        authorization: basic(project.authToken),
      }),
    ).toMatchObject({ status: 400, body: { success: false, message: "traits.email must be an email address" } });
    await profileWhen(project, "enc", (p) => p.event_count === 4);
    expect((await eventsOf(project, "enc")).map((event) => event.event_name)).toEqual([
      "Deflated",
      "Gzipped",
      "Short path",
      "Single",
    ]);
  });

  it("refuses a request that is no batch 400 with the reason, and a wrong or disagreeing key 401 before its body", async () => {
    const project = await createTestProject(stack.db.sql, "Refusals");
    const auth = { authorization: basic(project.authToken) };
    expect(await post("/v1/batch", JSON.stringify({ type: "track" }), auth)).toMatchObject({
      status: 400,
      body: { success: false, message: "body must be a JSON object with a batch list of messages" },
    });
    expect(await post("/v1/batch", "{not json", auth)).toMatchObject({
      status: 400,
      body: { success: false, message: "body is not valid JSON" },
    });
    expect(
      await post("/v1/batch", JSON.stringify({ batch: [] }), { ...auth, "content-encoding": "snappy" }),
    ).toMatchObject({ status: 400, body: { success: false } });
    const wrong = await post("/v1/batch", "{not json", { authorization: basic("cmt_wrong") });
    expect(wrong).toMatchObject({ status: 401, body: { success: false } });
    expect(wrong.headers.get("connection")).toBe("close");
    const disagreeing = JSON.stringify({ writeKey: "cmt_other", batch: [] });
    expect((await post("/v1/batch", disagreeing, auth)).status).toBe(401);
    expect((await post("/v1/batch", JSON.stringify({ batch: [] }), {})).status).toBe(401);
  });

  it("answers a batch past 5 MiB 400 whose write key is in its body, which SDKs drop rather than retry", async () => {
    const project = await createTestProject(stack.db.sql, "Oversized");
    const messages = Array.from({ length: 6 }, (_, n) => ({
      type: "track",
      userId: `big-${n}`,
      event: "Big",
      properties: { pad: "p".repeat(2 ** 20) },
    }));
    const body = JSON.stringify({ writeKey: project.authToken, batch: messages });
    expect(await post("/v1/batch", body, { "content-type": "application/json" })).toMatchObject({
      status: 400,
      body: { success: false, message: "body is larger than 5 MiB" },
    });
  });

  it("answers browsers' preflight and requests from any origin, as the users API does", async () => {
    const preflight = await fetch(`${base}/v1/batch`, {
      method: "OPTIONS",
      headers: {
        origin: "https://shop.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("*");
    expect(preflight.headers.get("access-control-allow-headers")).toBe("authorization, content-type");
    const project = await createTestProject(stack.db.sql, "Browsers");
    const answer = await post("/v1/p", JSON.stringify({ writeKey: project.authToken, anonymousId: "visitor" }), {
      origin: "https://shop.example",
      "content-type": "text/plain",
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("access-control-allow-origin")).toBe("*");
  });
});
