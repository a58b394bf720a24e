import { createLogger } from "@cm/config";
import { startGateway } from "@cm/gateway";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REDIS_PORT, testConfig } from "../support/env";
import { createTestProject } from "../support/project";
import { createTestStack, type TestStack } from "../support/services";
import { TcpProxy } from "../support/tcp-proxy";
import { waitFor } from "../support/wait";

let stack: TestStack;
let base: string;

interface Reply {
  status: number;
  body: any;
  headers: Headers;
}

async function call(
  method: string,
  path: string,
  options: { body?: unknown; key?: string | null; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const key = options.key === undefined ? stack.project.apiKey : options.key;
  const response = await fetch(`${base}/api/v2${path}`, {
    method,
    headers: {
      ...(options.body === undefined ? {} : { "content-type": "application/json" }),
      ...(key === null ? {} : { authorization: `Bearer ${key}` }),
      ...options.headers,
    },
    body:
      options.body === undefined
        ? undefined
        : typeof options.body === "string"
          ? options.body
          : JSON.stringify(options.body),
  });
  const text = await response.text();
  return { status: response.status, body: text === "" ? undefined : JSON.parse(text), headers: response.headers };
}

const patch = (
  id: number | string,
  body: unknown,
  options: { key?: string | null; headers?: Record<string, string> } = {},
) => call("PATCH", `/topics/${id}`, { ...options, body });

let topicCount = 0;
async function newTopic(defaultStatus: "subscribed" | "unsubscribed" = "subscribed"): Promise<number> {
  topicCount += 1;
  return stack.project.topic(`Topic ${topicCount}`, defaultStatus);
}

beforeAll(async () => {
  stack = await createTestStack("topics");
  base = (await stack.gateway()).url;
});
afterAll(() => stack.close());

describe("PATCH /api/v2/topics/{id}", () => {
  it("answers 200 with the Topic, name trimmed, omitted fields unchanged", async () => {
    const id = await newTopic();
    const created = (await call("GET", "/topics?limit=100")).body.data.find((t: { id: number }) => t.id === id);
    const reply = await patch(id, { name: "  Weekly digest  ", description: "Every Monday" });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      id,
      name: "Weekly digest",
      description: "Every Monday",
      default_status: "subscribed",
      created_at: created.created_at,
      updated_at: expect.any(String),
    });
    expect(reply.headers.get("revision")).toBe("2023-01-01");

    const second = await patch(id, { default_status: "unsubscribed" });
    expect(second.body).toMatchObject({
      name: "Weekly digest",
      description: "Every Monday",
      default_status: "unsubscribed",
    });
  });

  it("clears the description when it is null, and omits a blank one", async () => {
    const id = await newTopic();
    await patch(id, { description: "Something" });
    const cleared = await patch(id, { description: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body).not.toHaveProperty("description");
    const blank = await patch(id, { description: "   " });
    expect(blank.status).toBe(200);
    expect(blank.body).not.toHaveProperty("description");
  });

  it("moves updated_at on every change, and only then", async () => {
    const id = await newTopic();
    const first = await patch(id, { name: `Renamed ${id}` });
    const second = await patch(id, { description: "now described" });
    expect(Date.parse(second.body.updated_at)).toBeGreaterThan(Date.parse(first.body.updated_at));
    expect(Date.parse(first.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(first.body.created_at));
    const unchanged = await patch(id, { description: "now described" });
    expect(unchanged.body.updated_at).toBe(second.body.updated_at);
  });

  it("accepts the raw key and the Bearer form", async () => {
    const id = await newTopic();
    const raw = await fetch(`${base}/api/v2/topics/${id}`, {
      method: "PATCH",
      headers: { authorization: stack.project.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ description: "raw" }),
    });
    expect(raw.status).toBe(200);
    expect((await patch(id, { description: "bearer" })).status).toBe(200);
  });

  it("answers 401 for a missing or invalid key", async () => {
    const id = await newTopic();
    for (const key of [
      null,
      "",
      "nope",
      "cmk_1_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
      stack.project.authToken,
    ]) {
      const reply = await patch(id, { name: "x" }, { key });
      expect(reply).toMatchObject({ status: 401, body: { error: "unauthorized" } });
      expect(reply.headers.get("revision")).toBe("2023-01-01");
    }
  });

  it("answers 403 without campaign:write", async () => {
    const id = await newTopic();
    for (const permissions of [[], ["campaign:read", "profile:read"]] as const) {
      const key = await stack.project.keyWith([...permissions]);
      const reply = await patch(id, { name: "x" }, { key });
      expect(reply).toMatchObject({ status: 403, body: { error: "forbidden" } });
      expect(reply.headers.get("revision")).toBe("2023-01-01");
    }
  });

  it("answers 404 for an unknown id, a non-integer id, and another project's topic", async () => {
    const other = await createTestProject(stack.db.sql, "Other project");
    const foreign = await other.topic("Foreign");
    for (const id of [999_999, "abc", "1.5", "-1", "0", "99999999999", foreign]) {
      const reply = await patch(id, { name: "Mine now" });
      expect(reply, String(id)).toMatchObject({ status: 404, body: { error: "not_found" } });
    }
    const [row] = await stack.db.sql`SELECT name FROM topics WHERE id = ${foreign}`;
    expect(row?.name).toBe("Foreign");
  });

  it.each([
    ["an empty body", {}, [""]],
    ["no body at all", undefined, [""]],
    ["an unknown property", { name: "ok", colour: "red" }, ["colour"]],
    ["a name of the wrong type", { name: 5 }, ["name"]],
    ["a null name", { name: null }, ["name"]],
    ["a description of the wrong type", { description: 5 }, ["description"]],
    ["an unknown default_status", { default_status: "maybe" }, ["default_status"]],
    ["a name empty after trimming", { name: "   " }, ["name"]],
    ["a name over 255 characters", { name: "n".repeat(256) }, ["name"]],
    ["a description over 200 characters", { description: "d".repeat(201) }, ["description"]],
    [
      "several problems",
      { name: "", description: "d".repeat(201), default_status: 1, extra: true },
      ["default_status", "extra", "name", "description"],
    ],
    ["an array", [{ name: "x" }], [""]],
    ["a bare string", '"name"', [""]],
  ])("answers 422 for %s, one entry per problem", async (_, body, paths) => {
    const id = await newTopic();
    const reply = await patch(id, body);
    expect(reply.status).toBe(422);
    expect(reply.body.errors.map((e: { path: string }) => e.path).sort()).toEqual([...paths].sort());
    for (const entry of reply.body.errors)
      expect(entry).toEqual({ message: expect.any(String), path: expect.any(String) });
  });

  it("changes nothing when it answers 422", async () => {
    const id = await newTopic();
    await patch(id, { name: "", description: "changed?" });
    const [row] = await stack.db.sql`SELECT name, description FROM topics WHERE id = ${id}`;
    expect(row).toEqual({ name: `Topic ${topicCount}`, description: null });
  });

  it("answers 400 with {errors:[{message}]} for a body that is not JSON", async () => {
    const id = await newTopic();
    const reply = await patch(id, "{not json");
    expect(reply.status).toBe(400);
    expect(reply.body).toEqual({ errors: [{ message: expect.any(String) }] });
  });

  it("answers 400 for a malformed revision header, after checking the key, and accepts a dated one", async () => {
    const id = await newTopic();
    const malformed = await patch(id, { description: "r" }, { headers: { revision: "yesterday" } });
    expect(malformed).toMatchObject({ status: 400, body: { errors: [{ path: "header.revision" }] } });
    expect(malformed.headers.get("revision")).toBe("2023-01-01");
    const keyless = await patch(id, { description: "r" }, { key: null, headers: { revision: "yesterday" } });
    expect(keyless).toMatchObject({ status: 401, body: { error: "unauthorized" } });
    expect(keyless.headers.get("revision")).toBe("2023-01-01");
    const dated = await patch(id, { description: "r" }, { headers: { revision: "2024-06-01" } });
    expect(dated.status).toBe(200);
    expect(dated.headers.get("revision")).toBe("2023-01-01");
  });

  it("answers 409 for a name another topic has, ignoring case", async () => {
    const a = await newTopic();
    const b = await newTopic();
    await patch(a, { name: "Promotions" });
    const reply = await patch(b, { name: " PROMOTIONS " });
    expect(reply).toMatchObject({
      status: 409,
      body: { errors: [{ message: expect.stringContaining("PROMOTIONS") }] },
    });
    expect(Object.keys(reply.body.errors[0])).toEqual(["message"]);
  });

  it("lets a topic change the case of its own name", async () => {
    const id = await newTopic();
    await patch(id, { name: "sms alerts" });
    expect(await patch(id, { name: "SMS Alerts" })).toMatchObject({ status: 200, body: { name: "SMS Alerts" } });
  });

  it("lets exactly one of two concurrent renames to the same name win", async () => {
    for (let round = 0; round < 5; round += 1) {
      const a = await newTopic();
      const b = await newTopic();
      const name = `Race ${round}`;
      const replies = await Promise.all([patch(a, { name }), patch(b, { name: name.toUpperCase() })]);
      expect(replies.map((r) => r.status).sort()).toEqual([200, 409]);
      const rows = await stack.db
        .sql`SELECT id FROM topics WHERE project_id = ${stack.project.id} AND lower(name) = lower(${name})`;
      expect(rows).toHaveLength(1);
    }
  });

  it("answers 405 for methods topics do not have, such as DELETE", async () => {
    const id = await newTopic();
    const reply = await call("DELETE", `/topics/${id}`);
    expect(reply).toMatchObject({ status: 405, body: { error: "method_not_allowed" } });
    expect(reply.headers.get("allow")).toBe("PATCH");
    expect(reply.headers.get("revision")).toBe("2023-01-01");
  });
});

describe("POST /api/v2/topics", () => {
  it("creates a topic: 201, name trimmed, default_status subscribed unless given", async () => {
    const reply = await call("POST", "/topics", { body: { name: "  Release notes " } });
    expect(reply.status).toBe(201);
    expect(reply.body).toEqual({
      id: expect.any(Number),
      name: "Release notes",
      default_status: "subscribed",
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(reply.headers.get("location")).toBe(`/api/v2/topics/${reply.body.id}`);
    expect(reply.headers.get("revision")).toBe("2023-01-01");
    const opted = await call("POST", "/topics", {
      body: { name: "Offers", description: "Deals", default_status: "unsubscribed" },
    });
    expect(opted.body).toMatchObject({ name: "Offers", description: "Deals", default_status: "unsubscribed" });
  });

  it("answers 422 without a name or with anything a topic cannot hold", async () => {
    for (const [body, paths] of [
      [{}, ["name"]],
      [{ description: "no name" }, ["name"]],
      [{ name: "  " }, ["name"]],
      [{ name: "ok", default_status: "sometimes", other: 1 }, ["default_status", "other"]],
    ] as const) {
      const reply = await call("POST", "/topics", { body });
      expect(reply.status, JSON.stringify(body)).toBe(422);
      expect(reply.body.errors.map((e: { path: string }) => e.path).sort()).toEqual([...paths].sort());
    }
    const worded = await call("POST", "/topics", { body: { name: "ok", default_status: "sometimes", colour: "red" } });
    expect(worded.body.errors).toEqual([
      { path: "default_status", message: 'default_status must be "subscribed" or "unsubscribed"' },
      { path: "colour", message: "colour is not a known field" },
    ]);
  });

  it("answers 409 for a name the project has, ignoring case", async () => {
    await call("POST", "/topics", { body: { name: "Surveys" } });
    expect(await call("POST", "/topics", { body: { name: "surveys" } })).toMatchObject({
      status: 409,
      body: { errors: [{ message: expect.any(String) }] },
    });
  });

  it("needs campaign:write", async () => {
    const key = await stack.project.keyWith(["campaign:read"]);
    expect(await call("POST", "/topics", { body: { name: "Nope" }, key })).toMatchObject({
      status: 403,
      body: { error: "forbidden" },
    });
    expect(await call("POST", "/topics", { body: { name: "Nope" }, key: null })).toMatchObject({ status: 401 });
  });
});

describe("GET /api/v2/topics", () => {
  it("pages through the project's topics by id with an opaque cursor", async () => {
    const all = (await call("GET", "/topics?limit=100")).body.data as { id: number }[];
    const seen: number[] = [];
    let cursor: string | null = null;
    do {
      const reply: Reply = await call(
        "GET",
        `/topics?limit=7${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`,
      );
      expect(reply.status).toBe(200);
      expect(reply.headers.get("revision")).toBe("2023-01-01");
      expect(reply.body.data.length).toBeLessThanOrEqual(7);
      seen.push(...reply.body.data.map((t: { id: number }) => t.id));
      cursor = reply.body.next_cursor;
    } while (cursor !== null);
    expect(seen).toEqual(all.map((t) => t.id));
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(seen.length).toBeGreaterThan(7);
  });

  it("returns 25 by default and never another project's topics", async () => {
    const other = await createTestProject(stack.db.sql, "Elsewhere");
    const foreign = await other.topic("Not yours");
    for (let i = 0; i < 26; i += 1) await newTopic();
    const reply = await call("GET", "/topics");
    expect(reply.body.data).toHaveLength(25);
    expect(reply.body.next_cursor).toEqual(expect.any(String));
    const everything = (await call("GET", "/topics?limit=100")).body.data as { id: number }[];
    expect(everything.map((t) => t.id)).not.toContain(foreign);
  });

  it("ends with next_cursor null", async () => {
    const reply = await call("GET", "/topics?limit=100");
    expect(reply.body.data.length).toBeLessThan(100);
    expect(reply.body.next_cursor).toBeNull();
  });

  it("answers 422 for a bad limit or cursor", async () => {
    for (const query of [
      "limit=0",
      "limit=101",
      "limit=ten",
      "limit=2.5",
      "limit=1&limit=2",
      "cursor=nonsense",
      "cursor=",
    ]) {
      const reply = await call("GET", `/topics?${query}`);
      expect(reply.status, query).toBe(422);
      expect(reply.body.errors[0]).toEqual({ message: expect.any(String), path: expect.stringMatching(/^query\./) });
    }
  });

  it("needs campaign:read", async () => {
    const key = await stack.project.keyWith(["campaign:write"]);
    expect(await call("GET", "/topics", { key })).toMatchObject({ status: 403, body: { error: "forbidden" } });
  });
});

describe("when a dependency is away", () => {
  it("answers 503 unavailable with Retry-After when the key cannot be checked", async () => {
    const config = testConfig("postgres://postgres@127.0.0.1:1/none", stack.config.queuePrefix);
    const gateway = await startGateway(config, createLogger("topics-503", "silent"));
    try {
      const response = await fetch(`${gateway.url}/api/v2/topics/1`, {
        method: "PATCH",
        headers: { authorization: stack.project.apiKey, "content-type": "application/json" },
        body: JSON.stringify({ name: "x" }),
      });
      expect(response.status).toBe(503);
      expect(await response.json()).toEqual({ error: "unavailable" });
      expect(response.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(response.headers.get("revision")).toBe("2023-01-01");
    } finally {
      await gateway.stop();
    }
  });

  it("answers 503 and changes nothing when the fan-out cannot be queued, then recovers", async () => {
    const redisProxy = new TcpProxy("127.0.0.1", REDIS_PORT);
    await redisProxy.start();
    const config = testConfig(stack.db.url, stack.config.queuePrefix, {
      redisUrl: `redis://127.0.0.1:${redisProxy.port}`,
    });
    const gateway = await startGateway(config, createLogger("topics-redis", "silent"));
    const id = await newTopic();
    const change = () =>
      fetch(`${gateway.url}/api/v2/topics/${id}`, {
        method: "PATCH",
        headers: { authorization: stack.project.apiKey, "content-type": "application/json" },
        body: JSON.stringify({ name: `Renamed ${id}`, default_status: "unsubscribed" }),
      });
    try {
      await gateway.deps.topicFanoutQueue.waitUntilReady();
      await redisProxy.cut();
      const refused = await change();
      expect(refused.status).toBe(503);
      expect(await refused.json()).toEqual({ error: "unavailable" });
      expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
      const [row] = await stack.db.sql`SELECT name, default_status FROM topics WHERE id = ${id}`;
      expect(row).toEqual({ name: `Topic ${topicCount}`, default_status: "subscribed" });

      await redisProxy.restore();
      await waitFor("the retry to succeed", async () => ((await change()).status === 200 ? true : undefined));
    } finally {
      await gateway.stop();
      await redisProxy.cut();
    }
    const [fanout] = await stack.db.sql`SELECT generation FROM topic_fanouts WHERE topic_id = ${id}`;
    expect(fanout).toEqual({ generation: 1 });
  });
});
