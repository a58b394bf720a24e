import { operationKind, type ProfileOperation, type ProfileOperationKind } from "@cm/domain";
import { profileOperationsQueues, type ProfileOperationsJobData, type RedisConnection } from "@cm/queue";
import type { Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestStack, type TestStack } from "../support/services";
import { testRedis } from "../support/redis";

// Vero's users API beyond identify, at the wire (docs/profiles.md "Requests"). No worker runs:
// each accepted request is checked as the operation it queued.

const SUCCESS = { status: 200, message: "Success." };
const INVALID_TOKEN = {
  status: 401,
  message: "Invalid authentication: You must provide a valid auth_token to access this resource.",
};
const NOT_FOUND = { status: 404, message: "The resource doesn't exist" };
const JSON_TYPE = { "content-type": "application/json" };
const FORM_TYPE = { "content-type": "application/x-www-form-urlencoded" };

let stack: TestStack;
let base: string;
let redis: RedisConnection;
/** Every shard of the profile operations queue: an operation is in its user's. */
let queues: Queue<ProfileOperationsJobData>[];

beforeAll(async () => {
  stack = await createTestStack("profile_operations");
  base = (await stack.gateway()).url;
  redis = testRedis({ maxRetriesPerRequest: null });
  queues = profileOperationsQueues(redis, stack.config.queuePrefix, stack.config.intakeQueueShards);
});
afterAll(async () => {
  await Promise.all(queues.map((queue) => queue.close()));
  redis.disconnect();
  await stack.close();
});

const token = () => stack.project.authToken;

async function send(method: string, path: string, body: string | undefined, headers: Record<string, string> = {}) {
  const response = await fetch(`${base}/api/v2${path}`, { method, headers, body });
  return { status: response.status, body: await response.json(), detail: response.headers.get("x-error-detail") };
}

/** Every operation queued so far, in the order the jobs hold them. */
async function queued(): Promise<ProfileOperation[]> {
  const states = ["waiting", "active", "delayed", "completed", "failed"] as const;
  const jobs = await Promise.all(queues.map((queue) => queue.getJobs([...states])));
  return jobs.flat().flatMap((job) => job.data.events);
}

/** The one operation of kind `op` queued for the profile `key`. */
async function queuedFor(op: ProfileOperationKind, key: string): Promise<ProfileOperation> {
  const found = (await queued()).filter((operation) => operationKind(operation) === op && operation.key === key);
  expect(found, `${op} ${key} queued once`).toHaveLength(1);
  return found[0] as ProfileOperation;
}

/** A form as Rack nests it: `changes[plan]=pro`, `add[]=vip`. */
function formOf(fields: Record<string, unknown>): string {
  const form = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) {
    if (Array.isArray(value)) for (const item of value) form.append(`${name}[]`, String(item));
    else if (typeof value === "object" && value !== null)
      for (const [key, inner] of Object.entries(value)) form.append(`${name}[${key}]`, String(inner));
    else form.append(name, String(value));
  }
  return form.toString();
}

/** One request per operation, as the docs show it, naming a user of its own. */
const OPERATIONS = [
  { method: "PUT", path: "/users/edit", body: (id: string) => ({ id, changes: { plan: "pro" } }) },
  { method: "PUT", path: "/users/tags/edit", body: (id: string) => ({ id, add: ["vip"] }) },
  { method: "POST", path: "/users/unsubscribe", body: (id: string) => ({ id }) },
  { method: "POST", path: "/users/resubscribe", body: (id: string) => ({ id }) },
  { method: "PUT", path: "/users/reidentify", body: (id: string) => ({ id, new_id: `${id}-new` }) },
  { method: "POST", path: "/users/delete", body: (id: string) => ({ id }) },
] as const;

describe("each operation", () => {
  it("answers Success once queued, as the operation of the rules, stamped with the receive time", async () => {
    const before = Date.now();
    const sent = [
      await send(
        "PUT",
        `/users/edit?auth_token=${token()}`,
        JSON.stringify({ id: "op-edit", changes: { plan: "pro", trial: null } }),
        JSON_TYPE,
      ),
      await send(
        "PUT",
        `/users/tags/edit?auth_token=${token()}`,
        JSON.stringify({ id: "op-tags", add: ["vip", " beta "], remove: ["trial"] }),
        JSON_TYPE,
      ),
      await send("POST", `/users/unsubscribe?auth_token=${token()}`, JSON.stringify({ id: 7 }), JSON_TYPE),
      await send(
        "POST",
        `/users/resubscribe?auth_token=${token()}`,
        JSON.stringify({ id: null, email: "ada@example.com" }),
        JSON_TYPE,
      ),
      await send(
        "PUT",
        `/users/reidentify?auth_token=${token()}`,
        JSON.stringify({ id: "op-anon", new_id: "op-known" }),
        JSON_TYPE,
      ),
      await send("POST", `/users/delete?auth_token=${token()}`, JSON.stringify({ id: "op-gone" }), JSON_TYPE),
    ];
    for (const reply of sent) expect(reply).toMatchObject({ status: 200, body: SUCCESS });
    const after = Date.now();
    const project = { projectId: stack.project.id };

    expect(await queuedFor("edit", "i:op-edit")).toMatchObject({
      ...project,
      id: "op-edit",
      changes: { plan: "pro", trial: null },
    });
    expect(await queuedFor("tags", "i:op-tags")).toMatchObject({ add: ["vip", "beta"], remove: ["trial"] });
    expect(await queuedFor("subscription", "i:7")).toMatchObject({ ...project, id: "7", unsubscribed: true });
    expect(await queuedFor("subscription", "i:ada@example.com")).toMatchObject({ unsubscribed: false });
    expect(await queuedFor("reidentify", "i:op-anon")).toMatchObject({ newId: "op-known", newKey: "i:op-known" });
    const deleted = await queuedFor("delete", "i:op-gone");
    expect(deleted).toEqual({ op: "delete", ...project, key: "i:op-gone", id: "op-gone", t: deleted.t });
    for (const operation of await queued()) {
      expect(operation.t).toBeGreaterThanOrEqual(before);
      expect(operation.t).toBeLessThanOrEqual(after);
    }
  });

  it("answers on the .json path and with the methods clients use besides the usual one", async () => {
    for (const { method, path, body } of OPERATIONS) {
      const id = `json${path.replaceAll("/", "-")}`;
      const reply = await send(method, `${path}.json?auth_token=${token()}`, JSON.stringify(body(id)), JSON_TYPE);
      expect(reply, path).toMatchObject({ status: 200, body: SUCCESS });
    }
    const reidentify = JSON.stringify({ id: "post-anon", new_id: "post-known" });
    expect(await send("POST", `/users/reidentify?auth_token=${token()}`, reidentify, JSON_TYPE)).toMatchObject({
      status: 200,
    });
    expect(await queuedFor("reidentify", "i:post-anon")).toMatchObject({ newId: "post-known" });
    // vero-python 2.x: DELETE with a JSON body.
    const deleted = await send("DELETE", "/users/delete", JSON.stringify({ auth_token: token(), id: 1 }), JSON_TYPE);
    expect(deleted).toMatchObject({ status: 200, body: SUCCESS });
    expect(await queuedFor("delete", "i:1")).toMatchObject({ id: "1" });
  });

  it("answers any other method with the identify API's 404, before the profile read claims the path", async () => {
    for (const [method, path] of [
      ["GET", "/users/edit"],
      ["POST", "/users/edit.json"],
      ["DELETE", "/users/tags/edit"],
      ["GET", "/users/unsubscribe"],
      ["PUT", "/users/resubscribe.json"],
      ["PATCH", "/users/reidentify"],
      ["PUT", "/users/delete"],
      ["GET", "/users/delete.json"],
    ] as const) {
      const response = await fetch(`${base}/api/v2${path}?auth_token=${token()}`, {
        method,
        headers: { authorization: `Bearer ${stack.project.apiKey}` },
      });
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(await response.json()).toEqual(NOT_FOUND);
    }
  });
});

describe("credentials", () => {
  it("are taken from the query, a JSON body or a form body, by either name", async () => {
    for (const { method, path, body } of OPERATIONS) {
      const id = (n: number) => `cred${path.replaceAll("/", "-")}-${n}`;
      const form = (n: number, field: string) => formOf({ [field]: token(), ...body(id(n)) });
      const sent = [
        await send(method, `${path}?tracking_api_key=${token()}`, JSON.stringify(body(id(1))), JSON_TYPE),
        await send(method, path, JSON.stringify({ ...body(id(2)), auth_token: token() })),
        await send(method, path, JSON.stringify({ tracking_api_key: token(), ...body(id(3)) }), JSON_TYPE),
        await send(method, path, form(4, "auth_token"), FORM_TYPE),
        await send(method, path, form(5, "tracking_api_key"), FORM_TYPE),
      ];
      for (const reply of sent) expect(reply, path).toMatchObject({ status: 200, body: SUCCESS });
    }
    expect(JSON.stringify(await queued())).not.toContain(token());
  });

  it("answer 401 when missing, wrong, of another kind, or disagreeing, in every placement", async () => {
    const apiKey = stack.project.apiKey;
    for (const { method, path, body } of OPERATIONS) {
      const valid = body("someone");
      for (const [query, sent, headers] of [
        ["", JSON.stringify(valid), JSON_TYPE],
        ["?auth_token=nope", JSON.stringify(valid), JSON_TYPE],
        ["?tracking_api_key=nope", JSON.stringify(valid), JSON_TYPE],
        [`?auth_token=${apiKey}`, JSON.stringify(valid), JSON_TYPE],
        ["", JSON.stringify({ ...valid, auth_token: "nope" }), JSON_TYPE],
        ["", JSON.stringify({ ...valid, tracking_api_key: "nope" }), {}],
        ["", `auth_token=nope&id=someone`, FORM_TYPE],
        ["", `tracking_api_key=nope&id=someone`, FORM_TYPE],
        [`?auth_token=${token()}`, JSON.stringify({ ...valid, tracking_api_key: "nope" }), JSON_TYPE],
        [`?auth_token=nope`, "{not json", JSON_TYPE],
        // The same name twice, the valid token last: parsing keeps only the last.
        ["", `{"auth_token":"nope",${JSON.stringify(valid).slice(1, -1)},"auth_token":"${token()}"}`, JSON_TYPE],
        ["", `auth_token=nope&id=someone&auth_token=${encodeURIComponent(token())}`, FORM_TYPE],
      ] as const) {
        expect(await send(method, `${path}${query}`, sent, headers), `${method} ${path}${query} ${sent}`).toMatchObject(
          {
            status: 401,
            body: INVALID_TOKEN,
          },
        );
      }
    }
  });
});

describe("bodies", () => {
  it("answers 400 with the reason in plain words in x-error-detail", async () => {
    for (const [method, path, body, reason] of [
      ["PUT", "/users/edit", { id: "u" }, /^changes is required and must be a JSON object$/],
      ["PUT", "/users/edit", { changes: { a: 1 } }, /^id or email is required$/],
      ["PUT", "/users/edit", { id: "u", changes: "plan=pro" }, /^changes must be a JSON object$/],
      ["PUT", "/users/tags/edit", { id: "u" }, /^add or remove must name at least one tag$/],
      ["PUT", "/users/tags/edit", { id: "u", add: ["", " "] }, /^add or remove must name at least one tag$/],
      ["PUT", "/users/tags/edit", { id: "u", add: 7 }, /^add must be an array of at most 100 items or null$/],
      ["PUT", "/users/tags/edit", { id: "u", remove: [7] }, /^remove\[0\] must be a string of at most 255 characters$/],
      ["POST", "/users/unsubscribe", {}, /^id or email is required$/],
      ["POST", "/users/resubscribe", { email: "nobody" }, /^email must be an email address/],
      ["PUT", "/users/reidentify", { id: "a" }, /^new_id is required/],
      ["PUT", "/users/reidentify", { email: "a@b.co", new_id: "b" }, /^id is required/],
      ["POST", "/users/delete", { id: 2 ** 60 }, /^id must be sent as a string when it is larger than 2\^53 - 1$/],
      ["POST", "/users/delete", { id: "" }, /^id must be a string of at least 1 character/],
      ["POST", "/users/delete", [], /^body must be a JSON object$/],
    ] as const) {
      const reply = await send(method, `${path}?auth_token=${token()}`, JSON.stringify(body), JSON_TYPE);
      expect(reply, `${path} ${JSON.stringify(body)}`).toMatchObject({
        status: 400,
        body: { status: 400, message: "Bad Request" },
      });
      expect(reply.detail, `${path} ${JSON.stringify(body)}`).toMatch(reason);
    }
    const notJson = await send("PUT", `/users/edit?auth_token=${token()}`, "{not json", JSON_TYPE);
    expect(notJson).toMatchObject({ status: 400, detail: "body is not valid JSON" });
    const tooLarge = JSON.stringify({ id: "u", changes: { blob: "y".repeat(300_000) } });
    expect(await send("PUT", `/users/edit?auth_token=${token()}`, tooLarge, JSON_TYPE)).toMatchObject({
      status: 413,
      body: { status: 413, message: "Payload Too Large" },
    });
  });

  it("reads forms: nested or JSON-text changes, tag lists in brackets or as JSON text, a name without a value as null", async () => {
    const auth = `auth_token=${encodeURIComponent(token())}`;
    const forms = [
      ["PUT", "/users/edit", `${auth}&id=form-edit-1&changes[plan]=pro&changes[age]=36`],
      ["PUT", "/users/edit", `${auth}&id=form-edit-2&changes={"plan":"pro","age":36}`],
      ["PUT", "/users/tags/edit", `${auth}&id=form-tags-1&add[]=vip&add[]=beta`],
      ["PUT", "/users/tags/edit", `${auth}&id=form-tags-2&add=["prospect"]&remove=[]`],
      ["POST", "/users/unsubscribe", `id&email=form%40example.com&${auth}&development_mode=false`],
    ] as const;
    for (const [method, path, body] of forms) {
      expect(await send(method, path, body, FORM_TYPE), body).toMatchObject({ status: 200, body: SUCCESS });
    }
    expect(await queuedFor("edit", "i:form-edit-1")).toMatchObject({ changes: { plan: "pro", age: "36" } });
    expect(await queuedFor("edit", "i:form-edit-2")).toMatchObject({ changes: { plan: "pro", age: 36 } });
    expect(await queuedFor("tags", "i:form-tags-1")).toMatchObject({ add: ["vip", "beta"], remove: [] });
    expect(await queuedFor("tags", "i:form-tags-2")).toMatchObject({ add: ["prospect"], remove: [] });
    expect(await queuedFor("subscription", "i:form@example.com")).toMatchObject({ unsubscribed: true });
  });

  it("reads n8n's tag lists sent as JSON text, and PHP's empty changes list", async () => {
    const n8n = JSON.stringify({ id: "n8n-tags", add: JSON.stringify(["a", " b"]), auth_token: token() });
    expect(await send("PUT", "/users/tags/edit", n8n, JSON_TYPE)).toMatchObject({ status: 200 });
    expect(await queuedFor("tags", "i:n8n-tags")).toMatchObject({ add: ["a", "b"] });
    const php = JSON.stringify({ auth_token: token(), id: "php-edit", changes: [] });
    expect(await send("PUT", "/users/edit.json", php, JSON_TYPE)).toMatchObject({ status: 200 });
    expect(await queuedFor("edit", "i:php-edit")).toMatchObject({ changes: {} });
  });

  it("takes what other clients send: a reidentify onto the same id, objects as JSON text, one tag as text, a DELETE's fields in the query", async () => {
    const auth = `auth_token=${encodeURIComponent(token())}`;
    const same = await send(
      "PUT",
      `/users/reidentify?${auth}`,
      JSON.stringify({ id: "check", new_id: "check" }),
      JSON_TYPE,
    );
    expect(same).toMatchObject({ status: 200, body: SUCCESS });
    expect((await queued()).filter((operation) => operation.key === "i:check")).toEqual([]);

    const identify = JSON.stringify({ id: "java-1", data: JSON.stringify({ plan: "pro" }) });
    expect(await send("POST", `/users/track?${auth}`, identify, JSON_TYPE)).toMatchObject({ status: 200 });
    expect(await queuedFor("identify", "i:java-1")).toMatchObject({ data: { plan: "pro" } });
    const edit = JSON.stringify({ id: "java-2", changes: JSON.stringify({ plan: "team" }) });
    expect(await send("PUT", `/users/edit?${auth}`, edit, JSON_TYPE)).toMatchObject({ status: 200 });
    expect(await queuedFor("edit", "i:java-2")).toMatchObject({ changes: { plan: "team" } });

    const tags = JSON.stringify({ id: "one-tag", add: "vip", remove: " trial " });
    expect(await send("PUT", `/users/tags/edit?${auth}`, tags, JSON_TYPE)).toMatchObject({ status: 200 });
    expect(await queuedFor("tags", "i:one-tag")).toMatchObject({ add: ["vip"], remove: ["trial"] });

    expect(await send("DELETE", `/users/delete?${auth}&id=query-delete`, undefined)).toMatchObject({
      status: 200,
      body: SUCCESS,
    });
    expect(await queuedFor("delete", "i:query-delete")).toMatchObject({ id: "query-delete" });
    expect(await send("DELETE", `/users/delete?${auth}`, undefined)).toMatchObject({ status: 400 });
  });
});

describe("browsers", () => {
  it("may call every operation from a web page, by each method it takes, preflight first", async () => {
    const calls = [
      ...OPERATIONS,
      { method: "POST", path: "/users/reidentify", body: (id: string) => ({ id, new_id: `${id}-new` }) },
      { method: "DELETE", path: "/users/delete", body: (id: string) => ({ id }) },
    ];
    for (const { method, path, body } of calls) {
      const preflight = await fetch(`${base}/api/v2${path}?tracking_api_key=x`, {
        method: "OPTIONS",
        headers: {
          origin: "https://shop.example",
          "access-control-request-method": method,
          "access-control-request-headers": "content-type",
        },
      });
      expect(preflight.status, path).toBe(204);
      expect(preflight.headers.get("access-control-allow-origin")).toBe("*");
      expect(preflight.headers.get("access-control-allow-methods")).toContain(method);
      const response = await fetch(`${base}/api/v2${path}?tracking_api_key=${token()}`, {
        method,
        headers: { ...JSON_TYPE, origin: "https://shop.example" },
        body: JSON.stringify(body(`browser-${method}${path.replaceAll("/", "-")}`)),
      });
      expect(response.status, path).toBe(200);
      expect(response.headers.get("access-control-allow-origin")).toBe("*");
    }
  });
});
