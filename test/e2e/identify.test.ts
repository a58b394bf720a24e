import { profileKeyForId, type ProfileOperation } from "@cm/domain";
import {
  PROFILE_OPERATIONS_JOB,
  PROFILE_OPERATIONS_V1,
  PROFILE_OPERATIONS_V2,
  producerConnection,
  profileOperationsJobData,
  profileOperationsQueue,
  profileOperationsQueues,
  type ProfileOperationsJobData,
  type RedisConnection,
} from "@cm/queue";
import type { Job, Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childEnv } from "../support/env";
import { startChild } from "../support/processes";
import { profileOperations } from "../support/profile-operations";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";

const INVALID_TOKEN_MESSAGE = "Invalid authentication: You must provide a valid auth_token to access this resource.";

let stack: TestStack;
let base: string;
let redis: RedisConnection;
let queue: Queue<ProfileOperationsJobData>;

async function track(body: unknown, token = stack.project.authToken, init: RequestInit = {}) {
  const response = await fetch(`${base}/api/v2/users/track?auth_token=${encodeURIComponent(token)}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...init,
  });
  return { status: response.status, body: await response.json(), detail: response.headers.get("x-error-detail") };
}

async function readProfile(id: string) {
  const response = await fetch(`${base}/api/v2/users/${encodeURIComponent(id)}`, {
    headers: { authorization: `Bearer ${stack.project.apiKey}` },
  });
  return response.status === 200 ? ((await response.json()) as Record<string, unknown>) : undefined;
}

beforeAll(async () => {
  stack = await createTestStack("identify");
  base = (await stack.gateway()).url;
  await stack.worker();
  redis = producerConnection(stack.config);
  queue = profileOperationsQueue(redis, stack.config.queuePrefix);
});
afterAll(async () => {
  await queue.close();
  redis.disconnect();
  await stack.close();
});

describe("POST /api/v2/users/track", () => {
  it("answers Success. and the worker applies the profile", async () => {
    const topic = await stack.project.topic("Newsletter");
    const reply = await track({
      id: "user-1",
      email: "ada@example.com",
      channels: [{ type: "push", address: "token-1", platform: "ios" }],
      data: { plan: "pro", language: "en" },
      preferences: { topics: [{ id: topic, status: "unsubscribed", name: "Newsletter" }] },
      integration_extra: "ignored",
    });
    expect(reply).toEqual({ status: 200, body: { status: 200, message: "Success." }, detail: null });
    const profile = await waitFor("profile", () => readProfile("user-1"));
    expect(profile).toMatchObject({
      id: "user-1",
      email: "ada@example.com",
      channels: [{ type: "push", address: "token-1", platform: "ios" }],
      data: { plan: "pro", language: "en" },
      topics: [{ id: topic, name: "Newsletter", status: "unsubscribed", source: "explicit" }],
    });
  });

  it("keys a profile by email, as its id, when no id is given", async () => {
    expect((await track({ email: "solo@example.com", data: { a: 1 } })).status).toBe(200);
    const profile = await waitFor("profile", () => readProfile("solo@example.com"));
    expect(profile).toMatchObject({ id: "solo@example.com", email: "solo@example.com", data: { a: 1 } });
  });

  it("stores an integer id as text", async () => {
    expect((await track({ id: 12345 })).status).toBe(200);
    expect(await waitFor("profile", () => readProfile("12345"))).toMatchObject({ id: "12345" });
  });

  it("refuses a missing or invalid auth_token with 401 and the contract's message", async () => {
    for (const token of ["", "nope", "cmt_1_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", stack.project.apiKey]) {
      expect(await track({ id: "x" }, token)).toMatchObject({
        status: 401,
        body: { status: 401, message: INVALID_TOKEN_MESSAGE },
      });
    }
    const noToken = await fetch(`${base}/api/v2/users/track`, { method: "POST", body: "{}" });
    expect(noToken.status).toBe(401);
  });

  it.each([
    ["not JSON", "{not json"],
    ["not an object", "[1,2]"],
    ["a bare string", '"hello"'],
    ["no id and no email", { data: { a: 1 } }],
    ["an id of the wrong type", { id: { a: 1 } }],
    ["an email that is not an email", { email: "not-an-email" }],
    ["a channel without address", { id: "u", channels: [{ type: "push" }] }],
    ["a channel without type", { id: "u", channels: [{ address: "x" }] }],
    ["created_at that is not a timestamp", { id: "u", extras: { created_at: "last tuesday" } }],
    [
      "created_at far in the future",
      { id: "u", extras: { created_at: new Date(Date.now() + 3_600_000).toISOString() } },
    ],
    ["update_only that is not true/false", { id: "u", extras: { update_only: "yes" } }],
    ["a topic choice without id", { id: "u", preferences: { topics: [{ status: "subscribed" }] } }],
    ["a topic choice with another status", { id: "u", preferences: { topics: [{ id: 1, status: "maybe" }] } }],
    ["data that is not an object", { id: "u", data: "plan=pro" }],
    ["text holding U+0000", { id: "u", data: { a: "x\u0000y" } }],
  ])("answers 400 Bad Request for %s, with the reason in x-error-detail", async (_, body) => {
    const reply = await track(body);
    expect(reply.status).toBe(400);
    expect(reply.body).toEqual({ status: 400, message: "Bad Request" });
    expect(reply.detail).toBeTruthy();
  });

  it("gives the reason in x-error-detail in plain words, not as a type", async () => {
    expect((await track({ id: "u", email: "not-an-email" })).detail).toBe("email must be an email address");
  });

  it("answers 413 for a body over 256 KiB", async () => {
    const reply = await track({ id: "big", data: { blob: "x".repeat(256 * 1024) } });
    expect(reply).toMatchObject({ status: 413, body: { status: 413, message: "Payload Too Large" } });
  });

  it("answers 404 for unknown paths and methods of the identify API", async () => {
    for (const [method, path] of [
      ["POST", "/api/v2/users/track/extra"],
      ["GET", "/api/v2/users/track"],
      ["PUT", "/api/v2/users/track"],
      ["POST", "/api/v2/users"],
    ] as const) {
      const response = await fetch(`${base}${path}?auth_token=${stack.project.authToken}`, {
        method,
        body: method === "GET" ? undefined : "{}",
      });
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(await response.json()).toEqual({ status: 404, message: "The resource doesn't exist" });
    }
  });
});

describe("update_only", () => {
  it("creates nothing for a user who does not exist", async () => {
    expect((await track({ id: "ghost", data: { a: 1 }, extras: { update_only: true } })).status).toBe(200);
    expect((await track({ id: "marker-after-ghost" })).status).toBe(200);
    await waitFor("later profile", () => readProfile("marker-after-ghost"));
    expect(await readProfile("ghost")).toBeUndefined();
  });

  it("updates a user who exists", async () => {
    expect((await track({ id: "existing", data: { plan: "free" } })).status).toBe(200);
    await waitFor("profile", () => readProfile("existing"));
    expect((await track({ id: "existing", data: { plan: "pro" }, extras: { update_only: "true" } })).status).toBe(200);
    await waitFor(
      "update",
      async () => ((await readProfile("existing"))?.data as { plan?: string }).plan === "pro" || undefined,
    );
  });
});

describe("health", () => {
  it("answers /healthz and /readyz", async () => {
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ postgres: "ok", redis: "ok" });
  });
});

describe("job kinds", () => {
  it("leaves a job holding an operation the worker does not know alone: data and tries untouched, nothing applied", async () => {
    const on = (id: string) => ({ projectId: stack.project.id, key: profileKeyForId(id), id, t: Date.now() });
    // As a newer release might queue a new operation within version 1, beside an identify.
    const operations = [
      { ...on("beside-merge"), updateOnly: false, data: { plan: "pro" } },
      { ...on("merged"), op: "merge", into: "beside-merge" },
    ] as unknown as ProfileOperation[];
    const job = await queue.add(PROFILE_OPERATIONS_JOB, {
      ...PROFILE_OPERATIONS_V1,
      events: operations,
      acceptedAt: Date.now(),
    });
    await waitFor("the job left alone", async () => ((await job.getState()) === "delayed" ? true : undefined));
    const held = (await queue.getJob(job.id as string)) as Job;
    expect({ data: held.data, attemptsMade: held.attemptsMade }).toEqual({ data: job.data, attemptsMade: 0 });
    expect(await queue.getFailedCount()).toBe(0);
    expect(await readProfile("beside-merge")).toBeUndefined();
    await job.remove();
  });
});

describe("payload versions", () => {
  it("applies a version 2 job, whose operations are named by their ids alone, and keeps only its summary", async () => {
    const p = profileOperations(stack.project.id);
    const now = Date.now();
    const data = profileOperationsJobData(
      [
        p.identify("v2-user", now, { email: "v2@example.com", data: { plan: "basic" } }),
        p.edit("v2-user", now + 1, { plan: "pro" }),
        p.tags("v2-user", now + 2, ["vip"]),
        p.identify("v2-anon", now, { data: { seen: true } }),
        p.reidentify("v2-anon", "v2-known", now + 3),
        p.identify("v2-gone", now, {}),
        p.delete("v2-gone", now + 4),
      ],
      2,
    );
    // The wire: the operations in `operations`, with no profile key of the gateway's making.
    expect(data).toMatchObject({ ...PROFILE_OPERATIONS_V2, acceptedAt: expect.any(Number) });
    expect(JSON.stringify(data)).not.toMatch(/"(key|newKey|events)"/);
    const job = await queue.add(PROFILE_OPERATIONS_JOB, data);
    await waitFor("the job applied", async () => ((await job.getState()) === "completed" ? true : undefined));

    expect(await readProfile("v2-user")).toMatchObject({
      id: "v2-user",
      email: "v2@example.com",
      data: { plan: "pro" },
      tags: ["vip"],
    });
    expect(await readProfile("v2-known")).toMatchObject({ id: "v2-known", data: { seen: true } });
    expect(await readProfile("v2-gone")).toBeUndefined();
    const done = (await queue.getJob(job.id as string)) as Job;
    expect(done.data).toEqual({
      ...PROFILE_OPERATIONS_V2,
      operations: [],
      acceptedAt: data.acceptedAt,
      completed: { items: 7, projects: [stack.project.id] },
    });
  });

  it("writes version 1 from the gateway, which the previous release's workers read", async () => {
    const before = Date.now();
    expect((await track({ id: "v1-user", data: { plan: "basic" } })).status).toBe(200);
    await waitFor("the profile", () => readProfile("v1-user"));
    // The gateway's job is in the user's shard, whichever it is.
    const shards = profileOperationsQueues(redis, stack.config.queuePrefix, stack.config.intakeQueueShards);
    const jobs = (await Promise.all(shards.map((shard) => shard.getJobs(["completed"])))).flat();
    await Promise.all(shards.map((shard) => shard.close()));
    const written = jobs.filter((job) => job.timestamp >= before).map((job) => job.data);
    expect(written).toContainEqual(
      expect.objectContaining({ ...PROFILE_OPERATIONS_V1, events: [], completed: expect.anything() }),
    );
  });

  it("leaves a job of a version it does not know alone: data and tries untouched, nothing applied", async () => {
    const { identify } = profileOperations(stack.project.id);
    const newer = { ...PROFILE_OPERATIONS_V2, v: 3, operations: [identify("v3-user", Date.now())] };
    const job = await queue.add(PROFILE_OPERATIONS_JOB, newer as never);
    await waitFor("the job left alone", async () => ((await job.getState()) === "delayed" ? true : undefined));
    const held = (await queue.getJob(job.id as string)) as Job;
    expect({ data: held.data, attemptsMade: held.attemptsMade }).toEqual({ data: newer, attemptsMade: 0 });
    expect(await readProfile("v3-user")).toBeUndefined();
    await job.remove();
  });
});

describe("settings", () => {
  it("names the deprecated IDENTIFY_BATCH_* and IDENTIFY_WRITE_TIMEOUT_MS a gateway is given when it starts", async () => {
    const env = childEnv(
      { ...stack.config, port: 0, logLevel: "info" },
      { IDENTIFY_BATCH_WAIT_MS: "5", IDENTIFY_WRITE_TIMEOUT_MS: "2000" },
    );
    const gateway = startChild("apps/gateway/dist/main.js", env);
    try {
      await waitFor("the gateway to listen", async () => /"url":"(http:[^"]+)"/.exec(gateway.output())?.[1]);
      expect(gateway.output()).toContain(
        "IDENTIFY_BATCH_WAIT_MS is deprecated: set PROFILE_OPERATIONS_BATCH_WAIT_MS and EVENTS_BATCH_WAIT_MS instead",
      );
      expect(gateway.output()).toContain(
        "IDENTIFY_WRITE_TIMEOUT_MS is deprecated: set PROFILE_OPERATIONS_WRITE_TIMEOUT_MS and EVENTS_WRITE_TIMEOUT_MS instead",
      );
    } finally {
      gateway.child.kill("SIGTERM");
      await gateway.exited;
    }
  });
});
