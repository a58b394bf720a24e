import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWebhookEndpoint, rotateProjectCredential } from "@cm/app";
import { recordWebhookFailure, revokeWebhookEndpoint, type Sql } from "@cm/db";
import { feedSettled } from "../support/change-feed";
import { createTestProject, type TestProject } from "../support/project";
import { createTestStack, type TestStack } from "../support/services";

// The API's management of a project's keys and webhook endpoints (docs/api.md "API keys",
// "Webhooks"), against the real gateway and Postgres.

let stack: TestStack;
let sql: Sql;
let base: string;
let other: TestProject;
const secretKey = randomBytes(32);

async function call(method: string, path: string, key: string | null, body?: unknown) {
  const response = await fetch(`${base}/api/v2${path}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(key === null ? {} : { authorization: `Bearer ${key}` }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === "" ? undefined : JSON.parse(text), headers: response.headers };
}

const keyOf = (token: string) => token.split("_")[1] as string;
const secretOf = (token: string) => token.split("_").slice(2).join("_");

/** An endpoint made as ctl webhook create makes it; its host's address is given, not looked up. */
async function newEndpoint(projectId: number, url: string, types: string[] | null = null) {
  const deps = {
    sql,
    secretKey,
    allowPrivateNetworks: false,
    resolve: async () => [{ address: "93.184.215.14", family: 4 }],
  };
  return createWebhookEndpoint(deps, projectId, { url, types });
}

beforeAll(async () => {
  stack = await createTestStack("manage_api");
  sql = stack.db.sql;
  base = (await stack.gateway()).url;
  other = await createTestProject(sql, "Another project");
});
afterAll(() => stack.close());

describe("API keys", () => {
  it("lists the project's keys, never a secret or its hash; keys:read is needed", async () => {
    const listed = await call("GET", "/keys", stack.project.apiKey);
    expect(listed.status).toBe(200);
    const mine = listed.body.data.find((key: { id: string }) => key.id === keyOf(stack.project.apiKey));
    expect(mine).toEqual({
      id: keyOf(stack.project.apiKey),
      permissions: expect.arrayContaining(["keys:read", "keys:write", "webhooks:read", "webhooks:write"]),
      created_at: expect.any(String),
      expires_at: null,
      revoked_at: null,
      working: true,
    });
    expect(listed.body.data.map((key: { id: string }) => key.id)).not.toContain(keyOf(other.apiKey));
    const [{ secret_hash: hash }] = await sql<{ secret_hash: Buffer }[]>`
      SELECT secret_hash FROM credentials WHERE id = ${keyOf(stack.project.apiKey)}`;
    const text = JSON.stringify(listed.body);
    for (const shown of [secretOf(stack.project.apiKey), hash!.toString("hex"), hash!.toString("base64")]) {
      expect(text).not.toContain(shown);
    }

    const writeOnly = await stack.project.keyWith(["keys:write"]);
    expect(await call("GET", "/keys", writeOnly)).toMatchObject({ status: 403, body: { error: "forbidden" } });
    expect(await call("GET", "/keys", null)).toMatchObject({ status: 401, body: { error: "unauthorized" } });
  });

  it("creates a key that is shown once, stored only as a hash, and works with its permissions", async () => {
    const created = await call("POST", "/keys", stack.project.apiKey, {
      permissions: ["changes:read", "changes:read"],
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^[1-9][0-9]*$/),
      permissions: ["changes:read"],
      created_at: expect.any(String),
      expires_at: null,
      revoked_at: null,
      working: true,
      api_key: expect.stringMatching(/^cmk_[1-9][0-9]*_[A-Za-z0-9_-]{43}$/),
    });
    const { id, api_key: apiKey } = created.body;
    expect(keyOf(apiKey)).toBe(id);
    expect(created.headers.get("location")).toBe(`/api/v2/keys/${id}`);

    const [row] = await sql<{ secret_hash: Buffer }[]>`SELECT secret_hash FROM credentials WHERE id = ${id}`;
    expect(row!.secret_hash).toEqual(createHash("sha256").update(secretOf(apiKey)).digest());
    expect(JSON.stringify(await sql`SELECT * FROM credentials`)).not.toContain(secretOf(apiKey));

    const listed = await call("GET", "/keys", stack.project.apiKey);
    const { api_key: _shownOnce, ...resource } = created.body;
    expect(listed.body.data).toContainEqual(resource);
    expect(JSON.stringify(listed.body)).not.toContain(secretOf(apiKey));

    expect((await call("GET", "/changes", apiKey)).status).toBe(200);
    expect((await call("GET", "/topics", apiKey)).status).toBe(403);
    expect((await call("GET", "/keys", apiKey)).status).toBe(403);
  });

  it("refuses a key with permissions the calling key lacks, naming them; gives those it holds", async () => {
    const [{ count: before }] = await sql<{ count: number }[]>`SELECT count(*)::int AS count FROM credentials`;
    const limited = await stack.project.keyWith(["keys:write", "changes:read"]);
    const escalation = await call("POST", "/keys", limited, {
      permissions: ["changes:read", "campaign:write", "keys:read", "keys:write"],
    });
    expect(escalation).toMatchObject({
      status: 403,
      body: {
        errors: [
          {
            path: "permissions",
            message:
              "this key does not hold campaign:write, keys:read: a key can only create keys with permissions it holds",
          },
        ],
      },
    });
    const [{ count: after }] = await sql<{ count: number }[]>`SELECT count(*)::int AS count FROM credentials`;
    expect(after).toBe(before + 1); // `limited` itself

    const given = await call("POST", "/keys", limited, { permissions: ["changes:read", "keys:write"] });
    expect(given).toMatchObject({ status: 201, body: { permissions: ["changes:read", "keys:write"] } });
    const none = await call("POST", "/keys", limited, { permissions: [] });
    expect(none).toMatchObject({ status: 201, body: { permissions: [] } });

    const readOnly = await stack.project.keyWith(["keys:read"]);
    const refused = await call("POST", "/keys", readOnly, { permissions: [] });
    expect(refused).toMatchObject({ status: 403, body: { error: "forbidden" } });
    expect((await call("POST", "/keys", null, { permissions: [] })).status).toBe(401);

    const unknown = await call("POST", "/keys", stack.project.apiKey, { permissions: ["admin"] });
    expect(unknown).toMatchObject({ status: 422, body: { errors: [{ path: "permissions[0]" }] } });
    const missing = await call("POST", "/keys", stack.project.apiKey, {});
    expect(missing).toMatchObject({ status: 422, body: { errors: [{ path: "permissions" }] } });
  });

  it("revokes a key of the project: it stops at once on this gateway, though its verdict was cached", async () => {
    const { body: created } = await call("POST", "/keys", stack.project.apiKey, { permissions: ["changes:read"] });
    // Used once: the gateway now holds its verdict for 30 s.
    expect((await call("GET", "/changes", created.api_key)).status).toBe(200);
    expect((await call("DELETE", `/keys/${created.id}`, stack.project.apiKey)).status).toBe(204);
    expect(await call("GET", "/changes", created.api_key)).toMatchObject({ status: 401 });
    const listed = await call("GET", "/keys", stack.project.apiKey);
    expect(listed.body.data.find((key: { id: string }) => key.id === created.id)).toMatchObject({
      working: false,
      revoked_at: expect.any(String),
    });
    expect(await call("DELETE", `/keys/${created.id}`, stack.project.apiKey)).toMatchObject({
      status: 404,
      body: { error: "not_found" },
    });
  });

  it("answers 404 for another project's key, an identify token's id and a malformed id, revoking nothing", async () => {
    for (const id of [keyOf(other.apiKey), keyOf(stack.project.authToken), "999999999", "abc", "0"]) {
      expect(await call("DELETE", `/keys/${id}`, stack.project.apiKey), id).toMatchObject({
        status: 404,
        body: { error: "not_found" },
      });
    }
    expect((await call("GET", "/keys", other.apiKey)).status).toBe(200);
    const [row] = await sql<{ revoked_at: Date | null }[]>`
      SELECT revoked_at FROM credentials WHERE id = ${keyOf(stack.project.authToken)}`;
    expect(row!.revoked_at).toBeNull();
    const writeless = await stack.project.keyWith(["keys:read"]);
    expect((await call("DELETE", `/keys/${keyOf(writeless)}`, writeless)).status).toBe(403);
  });

  it("names the methods a path has, for any other", async () => {
    const allowed: [string, string, string][] = [
      ["PATCH", "/keys", "GET, POST"],
      ["GET", "/keys/1", "DELETE"],
      ["DELETE", "/webhooks", "GET"],
      ["GET", "/webhooks/1/replay", "POST"],
    ];
    for (const [method, path, allow] of allowed) {
      const reply = await call(method, path, null);
      expect(reply, `${method} ${path}`).toMatchObject({ status: 405, body: { error: "method_not_allowed" } });
      expect(reply.headers.get("allow")).toBe(allow);
    }
  });

  it("lets a key being rotated out neither create keys nor revoke the one that replaced it", async () => {
    const old = await stack.project.keyWith(["keys:read", "keys:write"]);
    const { token: rotated } = await rotateProjectCredential({ sql }, { id: keyOf(old), kind: "api_key" }, 600);
    const successor = keyOf(rotated);
    // It still reads within its grace, but a leaked key, rotated, must not outlive its rotation.
    expect((await call("GET", "/keys", old)).status).toBe(200);
    const created = await call("POST", "/keys", old, { permissions: ["keys:read"] });
    expect(created).toMatchObject({
      status: 403,
      body: { errors: [{ message: expect.stringMatching(/rotated out/) }] },
    });
    expect((await call("DELETE", `/keys/${successor}`, old)).status).toBe(403);
    expect((await call("GET", "/keys", rotated)).status).toBe(200);
  });

  it("lets a key revoke itself", async () => {
    const self = await stack.project.keyWith(["keys:write"]);
    expect((await call("DELETE", `/keys/${keyOf(self)}`, self)).status).toBe(204);
    expect((await call("POST", "/keys", self, { permissions: [] })).status).toBe(401);
  });
});

describe("webhooks", () => {
  it("lists the project's endpoints with their lag and last failure, never a secret or what follows the origin of its URL", async () => {
    const { endpoint, secret } = await newEndpoint(stack.project.id, "https://hooks.example.com/in?token=s3cret", [
      "unsubscribed",
    ]);
    const elsewhere = await newEndpoint(other.id, "https://hooks.example.com/other");
    const caughtUp = await call("GET", "/webhooks", stack.project.apiKey);
    expect(caughtUp.status).toBe(200);
    expect(caughtUp.body.data.map((webhook: { id: string }) => webhook.id)).not.toContain(elsewhere.endpoint.id);
    expect(caughtUp.body.data.find((webhook: { id: string }) => webhook.id === endpoint.id)).toEqual({
      id: endpoint.id,
      url: "https://hooks.example.com/***",
      types: ["unsubscribed"],
      state: "active",
      state_changed_at: null,
      lag_seconds: 0,
      last_failure: null,
      last_delivered_at: null,
      next_try_at: expect.any(String),
      previous_secret_signs_until: null,
      created_at: expect.any(String),
    });
    const text = JSON.stringify(caughtUp.body);
    for (const hidden of ["s3cret", secret, secret.replace(/^whsec_/, "")]) expect(text).not.toContain(hidden);

    // A change after its cursor, applied 90 s ago: the endpoint trails the feed by that much.
    await sql`INSERT INTO profiles (project_id, key, external_id, created_t)
              VALUES (${stack.project.id}, 'i:lagging', 'lagging', ${Date.now()})`;
    await sql`UPDATE changes SET applied_at = now() - interval '90 seconds' WHERE project_id = ${stack.project.id}`;
    await feedSettled(sql);
    const failure = { error: "answered 500", retryBaseDelayMs: 1000, retryMaxDelayMs: 1000, parkAfterS: 0 };
    expect(await recordWebhookFailure(sql, endpoint.id, endpoint.cursor, failure)).toEqual({ state: "parked" });
    const parked = (await call("GET", "/webhooks", stack.project.apiKey)).body.data.find(
      (webhook: { id: string }) => webhook.id === endpoint.id,
    );
    expect(parked).toMatchObject({
      state: "parked",
      state_changed_at: expect.any(String),
      last_failure: {
        at: expect.any(String),
        error: "answered 500",
        failing_since: expect.any(String),
        failed_tries: 1,
      },
    });
    expect(parked.lag_seconds).toBeGreaterThanOrEqual(90);
    expect(parked.lag_seconds).toBeLessThan(600);

    expect((await call("GET", "/webhooks", await stack.project.keyWith(["webhooks:write"]))).status).toBe(403);
    expect((await call("GET", "/webhooks", null)).status).toBe(401);
  });

  it("replays a parked endpoint of the project only", async () => {
    const { endpoint } = await newEndpoint(stack.project.id, "https://hooks.example.com/replayed");
    const failure = { error: "timed out", retryBaseDelayMs: 1000, retryMaxDelayMs: 1000, parkAfterS: 0 };
    await recordWebhookFailure(sql, endpoint.id, endpoint.cursor, failure);
    const elsewhere = await newEndpoint(other.id, "https://hooks.example.com/elsewhere");
    await recordWebhookFailure(sql, elsewhere.endpoint.id, elsewhere.endpoint.cursor, failure);

    for (const id of [elsewhere.endpoint.id, "999999999", "abc"]) {
      expect(await call("POST", `/webhooks/${id}/replay`, stack.project.apiKey), id).toMatchObject({
        status: 404,
        body: { error: "not_found" },
      });
    }
    const readOnly = await stack.project.keyWith(["webhooks:read"]);
    expect((await call("POST", `/webhooks/${endpoint.id}/replay`, readOnly)).status).toBe(403);

    expect((await call("POST", `/webhooks/${endpoint.id}/replay`, stack.project.apiKey)).status).toBe(204);
    const [row] = await sql<{ state: string; failed_tries: number; next_try_at: Date }[]>`
      SELECT state, failed_tries, next_try_at FROM webhook_endpoints WHERE id = ${endpoint.id}`;
    expect(row).toMatchObject({ state: "active", failed_tries: 0 });
    expect(row!.next_try_at.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
    const listed = (await call("GET", "/webhooks", stack.project.apiKey)).body.data.find(
      (webhook: { id: string }) => webhook.id === endpoint.id,
    );
    expect(listed).toMatchObject({
      state: "active",
      last_failure: { error: "timed out", failing_since: null, failed_tries: 0 },
    });

    const again = await call("POST", `/webhooks/${endpoint.id}/replay`, stack.project.apiKey);
    expect(again).toMatchObject({ status: 409, body: { errors: [{ message: expect.stringContaining("active") }] } });
    await revokeWebhookEndpoint(sql, endpoint.id);
    expect((await call("POST", `/webhooks/${endpoint.id}/replay`, stack.project.apiKey)).status).toBe(409);
    const revoked = (await call("GET", "/webhooks", stack.project.apiKey)).body.data.find(
      (webhook: { id: string }) => webhook.id === endpoint.id,
    );
    expect(revoked).toMatchObject({ state: "revoked", lag_seconds: null });
    const [untouched] = await sql<{ state: string }[]>`
      SELECT state FROM webhook_endpoints WHERE id = ${elsewhere.endpoint.id}`;
    expect(untouched!.state).toBe("parked");
  });
});
