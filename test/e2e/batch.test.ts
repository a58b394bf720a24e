import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { createApp, type RunningGateway } from "@cm/gateway";
import type { ProfileOperation } from "@cm/domain";
import { addProfileOperationsToShards } from "@cm/queue";
import type { Histogram } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { batchRepliesIndex, IdempotentReplies } from "../../apps/gateway/src/idempotent-replies";
import { MicroBatcher } from "../../apps/gateway/src/micro-batcher";
import { createTestProject, type TestProject } from "../support/project";
import { drained } from "../support/queue";
import { keysMatching } from "../support/redis";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";

// POST /api/v2/batch (docs/bulk.md) against a gateway, a worker, Postgres and Redis.

const SUCCESS = { status: 200, message: "Success." };
const JSON_TYPE = { "content-type": "application/json" };
const NDJSON_TYPE = { "content-type": "application/x-ndjson" };

let stack: TestStack;
let gateway: RunningGateway;
let base: string;

beforeAll(async () => {
  stack = await createTestStack("batch");
  gateway = await stack.gateway();
  base = gateway.url;
  await stack.worker();
});
afterAll(() => stack.close());

interface Sent {
  status: number;
  body: { status: number; message: string; results?: { status: number; message: string }[] };
  detail: string | null;
  retryAfter: string | null;
}

async function send(
  path: string,
  body: string | Buffer,
  headers: Record<string, string> = JSON_TYPE,
  url = base,
): Promise<Sent> {
  const response = await fetch(`${url}/api/v2${path}`, { method: "POST", headers, body });
  return {
    status: response.status,
    body: (await response.json()) as Sent["body"],
    detail: response.headers.get("x-error-detail"),
    retryAfter: response.headers.get("retry-after"),
  };
}

const batch = (project: TestProject, operations: unknown[], headers: Record<string, string> = {}, url = base) =>
  send(
    `/batch?auth_token=${encodeURIComponent(project.authToken)}`,
    JSON.stringify({ batch: operations }),
    { ...JSON_TYPE, ...headers },
    url,
  );

async function read(project: TestProject, path: string) {
  const response = await fetch(`${base}/api/v2${path}`, { headers: { authorization: project.apiKey } });
  return { status: response.status, body: await response.json() };
}

/** The profile once `done` holds for it (null: once it reads 404). */
function profileWhen(project: TestProject, id: string, done: (profile: Record<string, unknown> | null) => boolean) {
  return waitFor(`profile ${id}`, async () => {
    const { status, body } = await read(project, `/users/${encodeURIComponent(id)}`);
    const profile = status === 200 ? (body as Record<string, unknown>) : null;
    return done(profile) ? profile : undefined;
  });
}

/** Every job queued so far applied: operations and tracked events, whose jobs apply in either order. */
const allApplied = () => drained([...gateway.deps.profileOperationsQueues, ...gateway.deps.eventsQueues]);
/** The batch answers a project keeps, by Idempotency-Key. */
const replyKeys = (projectId: number) =>
  keysMatching(gateway.deps.redis, `${batchRepliesIndex(gateway.deps.redis, stack.config.queuePrefix, projectId)}:*`);

/** The profile (null: 404) once every operation answered before is applied. */
async function settledProfile(project: TestProject, id: string) {
  await allApplied();
  const { status, body } = await read(project, `/users/${encodeURIComponent(id)}`);
  return status === 200 ? (body as Record<string, unknown>) : null;
}

/** Operations this gateway has written to the queues so far, of every kind. */
async function queuedSoFar(): Promise<number> {
  const sum = async (histogram: Histogram) =>
    (await histogram.get()).values.find((value) => value.metricName?.endsWith("_sum"))?.value ?? 0;
  const { metrics } = gateway.deps;
  return (await sum(metrics.profileOperationsBatchSize)) + (await sum(metrics.eventBatchSize));
}

function listen(app: ReturnType<typeof createApp>): Promise<Server> {
  return new Promise((resolve) => {
    const server = createServer(app.callback()).listen(0, "127.0.0.1", () => resolve(server));
  });
}

const urlOf = (server: Server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

describe("POST /api/v2/batch", () => {
  it("answers every operation in order, queues the valid ones of every type, and they are applied", async () => {
    const project = await createTestProject(stack.db.sql, "mixed");
    const operations = [
      { type: "identify", id: "m-1", email: "m1@example.com", data: { plan: "free" } },
      { type: "identify", data: { plan: "free" } },
      { type: "track", identity: { id: "m-1" }, event_name: "Signed up", data: { via: "batch" } },
      { type: "track", identity: { id: "m-1" } },
      { type: "edit", id: "m-1", changes: { plan: "pro" } },
      { type: "edit", id: "m-1" },
      { type: "tags", id: "m-1", add: ["vip", "beta"] },
      { type: "tags", id: "m-1", add: [] },
      { type: "identify", id: "m-2" },
      { type: "unsubscribe", id: "m-2" },
      { type: "unsubscribe", email: "not an email" },
      { type: "identify", id: "m-3" },
      { type: "unsubscribe", id: "m-3" },
      { type: "resubscribe", id: "m-3" },
      { type: "resubscribe" },
      { type: "identify", id: "m-anon", data: { seen: true } },
      { type: "reidentify", id: "m-anon", new_id: "m-known" },
      { type: "reidentify", id: "m-anon" },
      { type: "identify", id: "m-gone" },
      { type: "delete", id: "m-gone" },
      { type: "delete", id: "" },
      { type: "merge", id: "m-1" },
      "identify",
    ];
    const reply = await batch(project, operations);
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject(SUCCESS);
    expect(reply.body.results).toEqual([
      SUCCESS,
      { status: 400, message: "id or email is required" },
      SUCCESS,
      { status: 400, message: "event_name is required and must be a string of 1 to 255 characters" },
      SUCCESS,
      { status: 400, message: "changes is required and must be a JSON object" },
      SUCCESS,
      { status: 400, message: "add or remove must name at least one tag" },
      SUCCESS,
      SUCCESS,
      { status: 400, message: expect.stringMatching(/^email must be an email address/) },
      SUCCESS,
      SUCCESS,
      SUCCESS,
      { status: 400, message: "id or email is required" },
      SUCCESS,
      SUCCESS,
      { status: 400, message: expect.stringMatching(/^new_id is required/) },
      SUCCESS,
      SUCCESS,
      { status: 400, message: expect.stringMatching(/^id must be/) },
      { status: 400, message: expect.stringMatching(/^type must be one of "identify", "track", "edit", "tags"/) },
      { status: 400, message: "an operation must be a JSON object" },
    ]);

    // The track's job may be applied first, and make m-1 a profile before its identify lands.
    await allApplied();
    expect((await read(project, "/users/m-1")).body).toMatchObject({
      email: "m1@example.com",
      data: { plan: "pro" },
      tags: ["beta", "vip"],
      event_count: 1,
    });
    expect((await read(project, "/users/m-1/events")).body.data).toEqual([
      expect.objectContaining({ event_name: "Signed up", data: { via: "batch" } }),
    ]);
    expect((await read(project, "/users/m-2")).body).toMatchObject({ unsubscribed: true });
    expect((await read(project, "/users/m-known")).body).toMatchObject({ id: "m-known", data: { seen: true } });
    expect((await read(project, "/users/m-gone")).status).toBe(404);
    expect((await read(project, "/users/m-3")).body).toMatchObject({ unsubscribed: false });
  });

  it("applies the operations of one user in their order in the batch", async () => {
    const project = await createTestProject(stack.db.sql, "order");
    const reply = await batch(project, [
      { type: "identify", id: "o-1", data: { plan: "free", seats: 1 } },
      { type: "edit", id: "o-1", changes: { plan: "pro" } },
      { type: "tags", id: "o-1", add: ["trial"] },
      { type: "tags", id: "o-1", remove: ["trial"], add: ["paid"] },
      { type: "identify", id: "o-2", data: { plan: "free" } },
      { type: "edit", id: "o-2", changes: { plan: "pro" } },
      { type: "delete", id: "o-2" },
      { type: "identify", id: "o-3", data: { before: true } },
      { type: "delete", id: "o-3" },
      { type: "identify", id: "o-3", data: { after: true } },
      { type: "unsubscribe", id: "o-3" },
      { type: "resubscribe", id: "o-3" },
      { type: "unsubscribe", id: "o-3" },
    ]);
    expect(reply.body.results?.every((result) => result.status === 200)).toBe(true);
    expect(await profileWhen(project, "o-1", (profile) => profile !== null)).toMatchObject({
      data: { plan: "pro", seats: 1 },
      tags: ["paid"],
    });
    const o3 = await profileWhen(project, "o-3", (profile) => profile?.unsubscribed === true);
    expect(o3).toMatchObject({ data: { after: true } });
    expect(await profileWhen(project, "o-2", (profile) => profile === null)).toBeNull();
  });

  it("orders a batch after every request answered before it, however many operations a user has in it", async () => {
    const project = await createTestProject(stack.db.sql, "after-earlier");
    expect((await batch(project, [{ type: "identify", id: "e-1", data: { plan: "a" } }])).status).toBe(200);
    const tags = Array.from({ length: 500 }, (_, n) => ({ type: "tags", id: "e-1", add: [`t-${n}`] }));
    const second = await batch(project, [{ type: "identify", id: "e-1", data: { plan: "b" } }, ...tags]);
    expect(second.body.results?.every((result) => result.status === 200)).toBe(true);
    const profile = await settledProfile(project, "e-1");
    expect(profile).toMatchObject({ data: { plan: "b" } });
    expect(profile?.tags).toHaveLength(500);
  });

  it("orders a request sent after a batch's answer after every operation of the batch", async () => {
    const project = await createTestProject(stack.db.sql, "before-later");
    const tags = Array.from({ length: 300 }, (_, n) => ({ type: "tags", id: "l-1", add: [`t-${n}`] }));
    const first = await batch(project, [...tags, { type: "identify", id: "l-1", data: { plan: "a" } }]);
    expect(first.body.results?.every((result) => result.status === 200)).toBe(true);
    const later = await send(
      `/users/track?auth_token=${project.authToken}`,
      JSON.stringify({ id: "l-1", data: { plan: "b" } }),
    );
    expect(later.status).toBe(200);
    expect(await settledProfile(project, "l-1")).toMatchObject({ data: { plan: "b" } });
  });

  it("keeps every operation of a batch sent after a delete of its user", async () => {
    const project = await createTestProject(stack.db.sql, "after-delete");
    expect((await batch(project, [{ type: "identify", id: "d-1", data: { before: true } }])).status).toBe(200);
    await profileWhen(project, "d-1", (profile) => profile !== null);
    const deleted = await send(`/users/delete?auth_token=${project.authToken}`, JSON.stringify({ id: "d-1" }));
    expect(deleted.status).toBe(200);
    const tracks = Array.from({ length: 300 }, (_, n) => ({
      type: "track",
      identity: { id: "d-1" },
      event_name: "Viewed",
      data: { n },
    }));
    const reply = await batch(project, [{ type: "identify", id: "d-1", data: { after: true } }, ...tracks]);
    expect(reply.body.results?.every((result) => result.status === 200)).toBe(true);
    const profile = await settledProfile(project, "d-1");
    expect(profile).toMatchObject({ data: { after: true }, event_count: 300 });
    expect(profile?.data).not.toHaveProperty("before");
  });

  it("reads NDJSON, one operation a line, a line that is not JSON refusing itself only", async () => {
    const project = await createTestProject(stack.db.sql, "ndjson");
    const lines = [
      JSON.stringify({ type: "identify", id: "n-1", data: { from: "ndjson" } }),
      "",
      "{not json",
      JSON.stringify({ type: "tags", id: "n-1", add: ["lines"] }),
    ];
    const reply = await send(`/batch?auth_token=${project.authToken}`, `${lines.join("\n")}\n`, NDJSON_TYPE);
    expect(reply.body.results).toEqual([SUCCESS, { status: 400, message: "line 3 is not valid JSON" }, SUCCESS]);
    expect(await profileWhen(project, "n-1", (profile) => profile !== null)).toMatchObject({
      data: { from: "ndjson" },
      tags: ["lines"],
    });
    // Without the content type, the same text is no JSON: the request as a whole is refused.
    const unlabelled = await send(`/batch?auth_token=${project.authToken}`, lines.join("\n"), {});
    expect(unlabelled).toMatchObject({ status: 400, body: { status: 400, message: "Bad Request" } });
  });

  it("refuses a request that is no batch, holds more than 1,000 operations or more than 5 MiB", async () => {
    const project = stack.project;
    const path = `/batch?auth_token=${project.authToken}`;
    expect(await send(path, "{not json")).toMatchObject({ status: 400, detail: "body is not valid JSON" });
    expect(await send(path, JSON.stringify([{ type: "identify", id: "x" }]))).toMatchObject({
      status: 400,
      body: { status: 400, message: "Bad Request" },
      detail: expect.stringMatching(/^body must be a JSON object with a batch list of operations/),
    });
    const many = Array.from({ length: 1_001 }, (_, n) => ({ type: "identify", id: `many-${n}` }));
    const before = await queuedSoFar();
    expect(await batch(project, many)).toMatchObject({
      status: 400,
      detail: "batch must hold 1 to 1000 operations; it holds 1001",
    });
    expect(await batch(project, [])).toMatchObject({ status: 400, detail: expect.stringMatching(/^batch must hold/) });
    // A refused operation's reason is as long as a single call's x-error-detail at most.
    const bad = await batch(project, [{ type: "identify", id: "x", channels: Array(60).fill({ type: "push" }) }]);
    expect(bad.body.results?.[0]?.message).toMatch(/^channels\[0\]\.address is required/);
    expect(bad.body.results?.[0]?.message.length).toBe(300);
    const huge = { type: "identify", id: "huge", data: { blob: "x".repeat(5 * 1024 * 1024) } };
    expect(await batch(project, [huge])).toMatchObject({
      status: 413,
      body: { status: 413, message: "Payload Too Large" },
      detail: "body is larger than 5 MiB",
    });
    const inflated = gzipSync(JSON.stringify({ batch: [huge] }));
    expect(await send(path, inflated, { ...JSON_TYPE, "content-encoding": "gzip" })).toMatchObject({ status: 413 });
    expect(await queuedSoFar()).toBe(before);

    // Past a single call's 256 KiB, within the batch's 5 MiB: 1,000 operations of 600 bytes each.
    const large = Array.from({ length: 1_000 }, (_, n) => ({
      type: "identify",
      id: `l-${n}`,
      data: { pad: "p".repeat(600) },
    }));
    const accepted = await batch(project, large);
    expect(accepted.status).toBe(200);
    expect(accepted.body.results).toHaveLength(1_000);
    expect(await queuedSoFar()).toBe(before + 1_000);
    expect(
      await send(
        `/users/track?auth_token=${project.authToken}`,
        JSON.stringify({ id: "single", data: { pad: "p".repeat(300_000) } }),
      ),
    ).toMatchObject({ status: 413, detail: "body is larger than 256 KiB" });
  });

  it("refuses an operation larger than its single call's body may be, and queues the others", async () => {
    const project = await createTestProject(stack.db.sql, "oversized");
    const pad = (bytes: number) => "p".repeat(bytes);
    const single = JSON.stringify({ id: "s-big", data: { pad: pad(4_900_000) } });
    expect(await send(`/users/track?auth_token=${project.authToken}`, single)).toMatchObject({ status: 413 });
    const before = await queuedSoFar();
    const reply = await batch(project, [
      { type: "identify", id: "s-big", data: { pad: pad(4_900_000) } },
      { type: "identify", id: "s-within", data: { pad: pad(200_000) } },
      { type: "tags", id: "s-within", add: ["small"] },
    ]);
    expect(reply).toMatchObject({ status: 200, body: SUCCESS });
    expect(reply.body.results).toEqual([
      { status: 400, message: "operation is larger than 256 KiB, the most a single call's body may hold" },
      SUCCESS,
      SUCCESS,
    ]);
    expect(await queuedSoFar()).toBe(before + 2);
    expect(await settledProfile(project, "s-within")).toMatchObject({ tags: ["small"] });
    expect((await read(project, "/users/s-big")).status).toBe(404);
  });

  it("takes the credential wherever the users API does, and answers on the .json path and to a preflight", async () => {
    const project = await createTestProject(stack.db.sql, "credentials");
    const body = (id: string) => JSON.stringify({ batch: [{ type: "identify", id }] });
    const token = encodeURIComponent(project.authToken);
    expect(await send(`/batch?auth_token=${token}`, body("c-query"))).toMatchObject({ status: 200 });
    expect(await send(`/batch.json?tracking_api_key=${token}`, body("c-newer"))).toMatchObject({ status: 200 });
    const inBody = JSON.stringify({ auth_token: project.authToken, batch: [{ type: "identify", id: "c-body" }] });
    expect(await send("/batch", inBody, {})).toMatchObject({ status: 200, body: { results: [SUCCESS] } });
    const newerInBody = JSON.stringify({ tracking_api_key: project.authToken, batch: [{ type: "delete", id: "c-x" }] });
    expect(await send("/batch", newerInBody)).toMatchObject({ status: 200 });

    const unauthorized = {
      status: 401,
      body: {
        status: 401,
        message: "Invalid authentication: You must provide a valid auth_token to access this resource.",
      },
    };
    // The users API takes no credential in a header: an Authorization header alone is no credential.
    expect(
      await send("/batch", body("c-header"), { ...JSON_TYPE, authorization: `Bearer ${project.authToken}` }),
    ).toMatchObject(unauthorized);
    expect(await send(`/batch?auth_token=${encodeURIComponent(project.apiKey)}`, body("c-key"))).toMatchObject(
      unauthorized,
    );
    expect(await send("/batch?auth_token=wrong", body("c-wrong"))).toMatchObject(unauthorized);
    const other = await createTestProject(stack.db.sql, "other");
    const disagreeing = JSON.stringify({ auth_token: other.authToken, batch: [{ type: "identify", id: "c-two" }] });
    expect(await send(`/batch?auth_token=${token}`, disagreeing)).toMatchObject(unauthorized);
    // An NDJSON line is an operation, not a place for the credential.
    const line = JSON.stringify({ type: "identify", id: "c-line", auth_token: project.authToken });
    expect(await send("/batch", line, NDJSON_TYPE)).toMatchObject(unauthorized);

    const preflight = await fetch(`${base}/api/v2/batch`, {
      method: "OPTIONS",
      headers: { origin: "https://shop.example", "access-control-request-method": "POST" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("*");
    expect((await fetch(`${base}/api/v2/batch?auth_token=${token}`)).status).toBe(404);
    for (const id of ["c-query", "c-newer", "c-body"]) await profileWhen(project, id, (profile) => profile !== null);
  });
});

describe("Idempotency-Key", () => {
  const operations = (tag: string) => [
    { type: "identify", id: "i-1", data: { tag } },
    { type: "identify" },
    { type: "track", identity: { id: "i-1" }, event_name: "Retried", extras: { check_id: tag } },
  ];

  it("answers a retry with the first answer and queues nothing again, per project", async () => {
    const project = await createTestProject(stack.db.sql, "idempotent");
    const key = { "idempotency-key": "order-42: any text at all" };
    const before = await queuedSoFar();
    const first = await batch(project, operations("first"), key);
    expect(first.body.results).toEqual([SUCCESS, { status: 400, message: "id or email is required" }, SUCCESS]);
    expect(await queuedSoFar()).toBe(before + 2);
    expect(await batch(project, operations("first"), key)).toEqual(first);
    expect(await queuedSoFar()).toBe(before + 2);

    expect(await batch(project, operations("second"), key)).toMatchObject({
      status: 422,
      body: { status: 422, message: "Unprocessable Entity" },
      detail: "this Idempotency-Key was sent with a different body; use a new key for a new batch",
    });
    expect(await queuedSoFar()).toBe(before + 2);

    // Another project's key of the same text is its own.
    const other = await createTestProject(stack.db.sql, "idempotent-other");
    expect((await batch(other, operations("first"), key)).body.results?.[0]).toEqual(SUCCESS);
    expect(await queuedSoFar()).toBe(before + 4);

    await allApplied();
    expect((await read(project, "/users/i-1")).body).toMatchObject({ data: { tag: "first" }, event_count: 1 });
    expect(await batch(project, operations("first"), { "idempotency-key": "k".repeat(256) })).toMatchObject({
      status: 400,
      detail: "the Idempotency-Key header must be at most 255 characters",
    });
  });

  it("answers 422 to the same text under the same key read another way, JSON then NDJSON", async () => {
    const project = await createTestProject(stack.db.sql, "idempotent-format");
    const key = { "idempotency-key": "same-text" };
    const path = `/batch?auth_token=${project.authToken}`;
    // One line that is both a JSON batch and an NDJSON operation (one with no type).
    const text = JSON.stringify({ batch: [{ type: "identify", id: "f-1" }] });
    expect((await send(path, text, { ...JSON_TYPE, ...key })).body.results).toEqual([SUCCESS]);
    const before = await queuedSoFar();
    expect(await send(path, text, { ...NDJSON_TYPE, ...key })).toMatchObject({
      status: 422,
      detail: "this Idempotency-Key was sent with a different body; use a new key for a new batch",
    });
    expect(await queuedSoFar()).toBe(before);
    expect((await send(path, text, { ...JSON_TYPE, ...key })).body.results).toEqual([SUCCESS]);

    // A key the previous release kept holds no reading: its body alone is compared, as that release does.
    const redis = gateway.deps.redis;
    const [kept] = await replyKeys(project.id);
    const { readAs, ...previousRelease } = JSON.parse((await redis.get(kept as string)) as string) as Record<
      string,
      unknown
    >;
    expect(readAs).toBe("json");
    await redis.set(kept as string, JSON.stringify(previousRelease), "KEEPTTL");
    expect((await send(path, text, { ...NDJSON_TYPE, ...key })).body.results).toEqual([SUCCESS]);
    expect(await queuedSoFar()).toBe(before);
  });

  it("keeps a project's newest keys only: past its bound, the oldest are forgotten", async () => {
    const project = await createTestProject(stack.db.sql, "bounded");
    const other = await createTestProject(stack.db.sql, "bounded-other");
    const { redis } = gateway.deps;
    const prefix = stack.config.queuePrefix;
    const bounded = new IdempotentReplies(redis, prefix, 3);
    const server = await listen(createApp({ ...gateway.deps, idempotentReplies: bounded }));
    const keyed = (to: TestProject, n: number) =>
      batch(to, operations(`bounded-${n}`), { "idempotency-key": `bounded-${n}` }, urlOf(server));
    try {
      expect((await keyed(other, 0)).status).toBe(200);
      for (let n = 0; n < 5; n++) expect((await keyed(project, n)).status).toBe(200);

      // The newest three still answer a retry; the two oldest were forgotten, and are queued again.
      const before = await queuedSoFar();
      for (const n of [2, 3, 4]) expect((await keyed(project, n)).body.results?.[0]).toEqual(SUCCESS);
      expect(await queuedSoFar()).toBe(before);
      expect((await keyed(project, 0)).status).toBe(200);
      expect(await queuedSoFar()).toBe(before + 2);
      // Another project's keys count against its own bound only.
      expect((await keyed(other, 0)).status).toBe(200);
      expect(await queuedSoFar()).toBe(before + 2);
      expect(await replyKeys(project.id)).toHaveLength(3);
      expect(await redis.zcard(batchRepliesIndex(redis, prefix, project.id))).toBe(3);
    } finally {
      server.close();
    }
  });

  it("keeps no answer for a key forgotten while its batch was answered", async () => {
    const project = await createTestProject(stack.db.sql, "bounded-in-flight");
    const { redis } = gateway.deps;
    const prefix = stack.config.queuePrefix;
    const bounded = new IdempotentReplies(redis, prefix, 2);
    const reply = { ...SUCCESS, results: [SUCCESS] };
    const slow = await bounded.claim(project.id, "slow", "body");
    for (const key of ["newer-1", "newer-2"]) {
      const claim = await bounded.claim(project.id, key, "body");
      if (claim.state === "claimed") await claim.settle(reply);
    }
    if (slow.state === "claimed") await slow.settle(reply);
    expect(await replyKeys(project.id)).toHaveLength(2);
    expect((await bounded.claim(project.id, "slow", "body")).state).toBe("claimed");
  });

  it("answers 409 to a retry while the first request is still being answered", async () => {
    const project = await createTestProject(stack.db.sql, "in-flight");
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const slow = new MicroBatcher<ProfileOperation>(
      async (items) => {
        await held;
        await addProfileOperationsToShards(gateway.deps.profileOperationsQueues, items);
      },
      { writeTimeoutMs: 10_000 },
    );
    const server = await listen(createApp({ ...gateway.deps, profileOperationBatcher: slow }));
    try {
      const key = { "idempotency-key": "in-flight" };
      const first = batch(project, operations("held"), key, urlOf(server));
      await waitFor("the key claimed", async () => ((await replyKeys(project.id)).length > 0 ? true : undefined));
      expect(await batch(project, operations("held"), key)).toMatchObject({
        status: 409,
        body: { status: 409, message: "Conflict" },
        detail: expect.stringMatching(/still being answered/),
        retryAfter: "1",
      });
      release();
      expect((await first).status).toBe(200);
      expect(await batch(project, operations("held"), key)).toEqual(await first);
    } finally {
      release();
      server.close();
    }
  });

  it("answers 500 when an operation cannot be queued, and frees the key for the retry", async () => {
    const project = await createTestProject(stack.db.sql, "failed");
    const failing = new MicroBatcher<ProfileOperation>(() => Promise.reject(new Error("Redis went away")));
    const server = await listen(createApp({ ...gateway.deps, profileOperationBatcher: failing }));
    const key = { "idempotency-key": "failed-once" };
    try {
      expect(await batch(project, operations("lost"), key, urlOf(server))).toMatchObject({
        status: 500,
        body: { status: 500, message: "An error occurred with our API" },
      });
    } finally {
      server.close();
    }
    const retried = await batch(project, operations("lost"), key);
    expect(retried.body.results?.[0]).toEqual(SUCCESS);
    // The failed try's event may have been queued, and made the profile before the retry's identify lands.
    const applied = (profile: Record<string, unknown> | null) => (profile?.data as { tag?: string })?.tag === "lost";
    expect(await profileWhen(project, "i-1", applied)).toMatchObject({ data: { tag: "lost" } });
  });
});
