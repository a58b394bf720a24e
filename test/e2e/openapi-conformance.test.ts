import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { insertJourney, insertWebhookEndpoint, recordWebhookFailure } from "@cm/db";
import { sampleJourney } from "../support/journey-files";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";

interface OpenApi {
  paths: Record<
    string,
    Record<
      string,
      {
        responses: Record<
          string,
          { content?: { "application/json": { schema: object } }; headers?: Record<string, { schema: object }> }
        >;
      }
    >
  >;
  components: object;
}

let stack: TestStack;
let base: string;
let document: OpenApi;
const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
const seen: string[] = [];

/** The documented path template a request path matches, e.g. /topics/7 → /topics/{id}. */
function template(path: string): string {
  const relative = path.replace(/^\/api\/v2/, "").split("?")[0] as string;
  const found = Object.keys(document.paths).find((candidate) =>
    new RegExp(`^${candidate.replace(/\{[^}]+\}/g, "[^/]+")}$`).test(relative),
  );
  if (found === undefined) throw new Error(`${relative} is not in the OpenAPI document`);
  return found;
}

/** Sends a request and checks its answer against the document: the status, the headers it names, and the body schema. */
async function call(
  method: string,
  path: string,
  init: { body?: unknown; key?: string | null; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { "content-type": "application/json", ...init.headers };
  const key = init.key === undefined ? stack.project.apiKey : init.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    ...(init.body === undefined ? {} : { body: typeof init.body === "string" ? init.body : JSON.stringify(init.body) }),
  });
  const text = await response.text();
  const body = text === "" ? undefined : JSON.parse(text);
  const operation = document.paths[template(path)]?.[method.toLowerCase()];
  expect(operation, `${method} ${path} is documented`).toBeDefined();
  const documented = operation!.responses[String(response.status)];
  expect(documented, `${method} ${path} → ${response.status} is documented`).toBeDefined();
  const schema = documented!.content?.["application/json"].schema;
  if (response.status === 204) {
    expect(schema, `${method} ${path} → 204 has no body`).toBeUndefined();
    expect(text).toBe("");
  } else {
    expect(schema, `${method} ${path} → ${response.status} has a body schema`).toBeDefined();
    const validate = ajv.compile({ ...schema, components: document.components });
    expect(
      validate(body),
      `${method} ${path} → ${response.status}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 500)}`,
    ).toBe(true);
  }
  for (const [name, header] of Object.entries(documented!.headers ?? {})) {
    const value = response.headers.get(name);
    expect(
      value !== null && ajv.validate(header.schema, value),
      `${method} ${path} → ${response.status} sends a valid ${name} header: ${value}`,
    ).toBe(true);
  }
  seen.push(`${method.toLowerCase()} ${template(path)} ${response.status}`);
  return { status: response.status, body };
}

beforeAll(async () => {
  stack = await createTestStack("openapi");
  base = (await stack.gateway()).url;
  await stack.worker();
  document = (await (await fetch(`${base}/api/v2/openapi.json`)).json()) as OpenApi;
});
afterAll(() => stack.close());

describe("real responses conform to /api/v2/openapi.json", () => {
  it("is served at /api/v2 too", async () => {
    expect(await (await fetch(`${base}/api/v2`)).json()).toEqual(document);
  });

  it("identify", async () => {
    const track = (body: unknown, token = stack.project.authToken) =>
      call("POST", `/api/v2/users/track?auth_token=${token}`, { body, key: null });
    expect((await track({ id: "doc-user", email: "doc@example.com", data: { a: [1, null] } })).status).toBe(200);
    expect((await track({ data: {} })).status).toBe(400);
    expect((await track({ id: "x" }, "wrong")).status).toBe(401);
    expect((await track({ id: "x", data: { blob: "y".repeat(300_000) } })).status).toBe(413);
    const inBody = { id: "doc-user-2", tracking_api_key: stack.project.authToken };
    expect((await call("POST", "/api/v2/users/track.json", { body: inBody, key: null })).status).toBe(200);
    const form = `auth_token=${encodeURIComponent(stack.project.authToken)}&id=doc-user-3&data[plan]=pro`;
    const formHeaders = { "content-type": "application/x-www-form-urlencoded" };
    expect(
      (await call("POST", "/api/v2/users/track.json", { body: form, key: null, headers: formHeaders })).status,
    ).toBe(200);
    expect(
      (await call("POST", "/api/v2/users/track.json", { body: "id=x", key: null, headers: formHeaders })).status,
    ).toBe(401);
  });

  it("the other operations of Vero's users API", async () => {
    const token = stack.project.authToken;
    const operations = [
      ["PUT", "/users/edit", { id: "doc-user", changes: { plan: "pro", trial: null } }],
      ["PUT", "/users/tags/edit", { id: "doc-user", add: ["vip"], remove: ["trial"] }],
      ["POST", "/users/unsubscribe", { id: "doc-user" }],
      ["POST", "/users/resubscribe", { email: "doc@example.com" }],
      ["PUT", "/users/reidentify", { id: "doc-anon", new_id: "doc-known" }],
      ["POST", "/users/reidentify", { id: "doc-anon-2", new_id: "doc-known" }],
      ["POST", "/users/delete", { id: "doc-gone" }],
      ["DELETE", "/users/delete", { id: "doc-gone-2" }],
      ["POST", "/events/track", { identity: { id: "doc-user" }, event_name: "Documented", data: { page: 1 } }],
    ] as const;
    for (const [method, path, body] of operations) {
      for (const twin of [path, `${path}.json`]) {
        expect((await call(method, `/api/v2${twin}?auth_token=${token}`, { body, key: null })).status).toBe(200);
      }
      expect((await call(method, `/api/v2${path}?auth_token=wrong`, { body, key: null })).status).toBe(401);
      expect((await call(method, `/api/v2${path}?auth_token=${token}`, { body: {}, key: null })).status).toBe(400);
    }
    const tooLarge = { id: "x", changes: { blob: "y".repeat(300_000) } };
    expect((await call("PUT", `/api/v2/users/edit?auth_token=${token}`, { body: tooLarge, key: null })).status).toBe(
      413,
    );
  });

  it("the batch", async () => {
    const token = stack.project.authToken;
    const batch = {
      batch: [
        { type: "identify", id: "doc-batch", data: { plan: "pro" } },
        { type: "edit", id: "x" },
      ],
    };
    for (const path of ["/api/v2/batch", "/api/v2/batch.json"]) {
      const reply = await call("POST", `${path}?auth_token=${token}`, { body: batch, key: null });
      expect(reply).toMatchObject({ status: 200, body: { results: [{ status: 200 }, { status: 400 }] } });
    }
    const ndjson = { "content-type": "application/x-ndjson" };
    const lines = '{"type":"delete","id":"doc-batch-gone"}\n';
    expect(
      (await call("POST", `/api/v2/batch?auth_token=${token}`, { body: lines, key: null, headers: ndjson })).status,
    ).toBe(200);
    expect((await call("POST", `/api/v2/batch?auth_token=${token}`, { body: { batch: [] }, key: null })).status).toBe(
      400,
    );
    expect((await call("POST", "/api/v2/batch?auth_token=wrong", { body: batch, key: null })).status).toBe(401);
    const huge = { batch: [{ type: "identify", id: "x", data: { blob: "y".repeat(5_300_000) } }] };
    expect((await call("POST", `/api/v2/batch?auth_token=${token}`, { body: huge, key: null })).status).toBe(413);
    const key = { "idempotency-key": "doc-batch" };
    expect(
      (await call("POST", `/api/v2/batch?auth_token=${token}`, { body: batch, key: null, headers: key })).status,
    ).toBe(200);
    const other = { batch: [{ type: "delete", id: "doc-batch" }] };
    expect(
      (await call("POST", `/api/v2/batch?auth_token=${token}`, { body: other, key: null, headers: key })).status,
    ).toBe(422);
  });

  it("shows a request example for every operation", () => {
    for (const [path, methods] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        const samples = (operation as { "x-codeSamples"?: { source: string }[] })["x-codeSamples"];
        expect(samples?.[0]?.source, `${method} ${path}`).toMatch(/^curl /);
      }
    }
  });

  it("profile read", async () => {
    await stack.project.topic("Docs");
    await waitFor("profile", async () =>
      (await fetch(`${base}/api/v2/users/doc-user`, { headers: { authorization: stack.project.apiKey } })).status ===
      200
        ? true
        : undefined,
    );
    expect((await call("GET", "/api/v2/users/doc-user")).status).toBe(200);
    expect((await call("GET", "/api/v2/users/nobody")).status).toBe(404);
    expect((await call("GET", "/api/v2/users/doc-user", { key: null })).status).toBe(401);
    expect((await call("GET", "/api/v2/users/doc-user", { key: await stack.project.keyWith([]) })).status).toBe(403);
    expect((await call("GET", "/api/v2/users/doc-user", { headers: { revision: "someday" } })).status).toBe(400);
    await waitFor("the events", async () =>
      (await call("GET", "/api/v2/users/doc-user/events")).body.data.length > 0 ? true : undefined,
    );
    expect((await call("GET", "/api/v2/users/doc-user/events?limit=0")).status).toBe(422);
    expect((await call("GET", "/api/v2/users/doc-user/events", { key: null })).status).toBe(401);
    expect((await call("GET", "/api/v2/users/doc-user/export")).status).toBe(200);
    expect((await call("GET", "/api/v2/users/nobody/export")).status).toBe(404);
    const found = await call("GET", "/api/v2/users?email=DOC%40example.com");
    expect(found).toMatchObject({ status: 200, body: { data: [{ id: "doc-user" }], next_cursor: null } });
    expect((await call("GET", "/api/v2/users?unsubscribed=maybe")).status).toBe(422);
    expect((await call("GET", "/api/v2/users", { key: null })).status).toBe(401);
    expect((await call("GET", "/api/v2/heartbeat", { key: null })).status).toBe(200);
  });

  it("topics", async () => {
    const created = await call("POST", "/api/v2/topics", { body: { name: "Weekly", description: "Every week" } });
    expect(created.status).toBe(201);
    expect((await call("POST", "/api/v2/topics", { body: { name: "weekly" } })).status).toBe(409);
    expect((await call("POST", "/api/v2/topics", { body: { name: "" } })).status).toBe(422);
    expect(
      (
        await call("PATCH", `/api/v2/topics/${created.body.id}`, {
          body: { description: null, default_status: "unsubscribed" },
        })
      ).status,
    ).toBe(200);
    expect((await call("PATCH", `/api/v2/topics/${created.body.id}`, { body: {} })).status).toBe(422);
    expect((await call("PATCH", "/api/v2/topics/999999", { body: { name: "x" } })).status).toBe(404);
    expect(
      (
        await call("PATCH", `/api/v2/topics/${created.body.id}`, {
          body: { name: "x" },
          key: await stack.project.keyWith(["campaign:read"]),
        })
      ).status,
    ).toBe(403);
    const page = await call("GET", "/api/v2/topics?limit=1");
    expect(page.status).toBe(200);
    expect(
      (await call("GET", `/api/v2/topics?limit=1&cursor=${encodeURIComponent(page.body.next_cursor)}`)).status,
    ).toBe(200);
    expect((await call("GET", "/api/v2/topics?limit=0")).status).toBe(422);
  });

  it("journeys and messages", async () => {
    const id = await insertJourney(stack.db.sql, stack.project.id, sampleJourney());
    expect((await call("GET", `/api/v2/journeys/${id}`)).status).toBe(200);
    expect((await call("GET", `/api/v2/journeys/${id}/messages`)).status).toBe(200);
    expect((await call("GET", "/api/v2/journeys?status=active")).status).toBe(200);
    expect((await call("GET", "/api/v2/journeys?status=running")).status).toBe(422);
    expect((await call("GET", "/api/v2/journeys/424242")).status).toBe(404);
    expect((await call("GET", "/api/v2/journeys/424242/messages")).status).toBe(404);
    expect((await call("GET", `/api/v2/journeys/${id}`, { key: "nope" })).status).toBe(401);
  });

  it("the change feed", async () => {
    expect((await call("GET", "/api/v2/changes?limit=10")).status).toBe(200);
    const { body } = await call("GET", "/api/v2/changes?types=profile.created,user.erased");
    expect((await call("GET", `/api/v2/changes?after=${body.next as string}&wait=1`)).status).toBe(200);
    expect((await call("GET", "/api/v2/changes?after=nonsense")).status).toBe(400);
    expect((await call("GET", "/api/v2/changes?types=bogus")).status).toBe(400);
    expect((await call("GET", "/api/v2/changes", { key: "nope" })).status).toBe(401);
  });

  it("API keys and webhooks", async () => {
    const created = await call("POST", "/api/v2/keys", { body: { permissions: ["changes:read"] } });
    expect(created.status).toBe(201);
    expect((await call("GET", "/api/v2/keys")).status).toBe(200);
    const limited = await stack.project.keyWith(["keys:write"]);
    expect((await call("POST", "/api/v2/keys", { body: { permissions: ["keys:read"] }, key: limited })).status).toBe(
      403,
    );
    const readOnly = await stack.project.keyWith(["keys:read", "webhooks:read"]);
    expect((await call("POST", "/api/v2/keys", { body: { permissions: [] }, key: readOnly })).status).toBe(403);
    expect((await call("POST", "/api/v2/keys", { body: { permissions: ["root"] } })).status).toBe(422);
    expect((await call("DELETE", `/api/v2/keys/${created.body.id as string}`)).status).toBe(204);
    expect((await call("DELETE", `/api/v2/keys/${created.body.id as string}`)).status).toBe(404);

    // An address no setting lets the worker reach: it is refused before anything is dialled.
    const endpoint = await insertWebhookEndpoint(stack.db.sql, {
      projectId: stack.project.id,
      url: "http://192.0.2.1/in?token=t",
      types: null,
      secretSealed: randomBytes(32),
      cursor: null,
    });
    const failure = { error: "answered 500", retryBaseDelayMs: 1000, retryMaxDelayMs: 1000, parkAfterS: 0 };
    await recordWebhookFailure(stack.db.sql, endpoint.id, null, failure);
    expect((await call("GET", "/api/v2/webhooks")).status).toBe(200);
    expect((await call("POST", `/api/v2/webhooks/${endpoint.id}/replay`, { key: readOnly })).status).toBe(403);
    expect((await call("POST", `/api/v2/webhooks/${endpoint.id}/replay`)).status).toBe(204);
    expect((await call("POST", `/api/v2/webhooks/${endpoint.id}/replay`)).status).toBe(409);
    expect((await call("POST", "/api/v2/webhooks/999999/replay")).status).toBe(404);
  });

  it("the intake log", async () => {
    // The identifies sent above are in it once the gateway has written them (a moment after their answers).
    const { body } = await waitFor("the intake log's entries", async () => {
      const page = await call("GET", "/api/v2/intake-log?limit=10");
      return (page.body.entries as unknown[]).length > 0 ? page : undefined;
    });
    expect((await call("GET", `/api/v2/intake-log?after=${body.next as string}&wait=1`)).status).toBe(200);
    expect((await call("GET", "/api/v2/intake-log?outcome=refused&door=users&user_id=x")).status).toBe(200);
    expect((await call("GET", "/api/v2/intake-log?after=nonsense")).status).toBe(400);
    expect((await call("GET", "/api/v2/intake-log?door=smtp")).status).toBe(400);
    expect((await call("GET", "/api/v2/intake-log", { key: "nope" })).status).toBe(401);
  });

  it("exercised every documented operation's success answer", () => {
    for (const [path, methods] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        const success = Object.keys(operation.responses).find((status) => status.startsWith("2"));
        expect(seen, `${method} ${path}`).toContain(`${method} ${path} ${success}`);
      }
    }
  });
});
