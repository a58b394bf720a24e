import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestStack, type TestStack } from "../support/services";
import { storedKeyOf } from "../support/profile-operations";
import { waitFor } from "../support/wait";

// What real Vero clients send, beyond api.md's one documented transport (docs/integrations.md).

const INVALID_TOKEN = {
  status: 401,
  message: "Invalid authentication: You must provide a valid auth_token to access this resource.",
};
const SUCCESS = { status: 200, message: "Success." };

let stack: TestStack;
let base: string;

async function post(path: string, body: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${base}/api/v2${path}`, { method: "POST", headers, body });
  return { status: response.status, body: await response.json(), detail: response.headers.get("x-error-detail") };
}

const json = (value: unknown) => JSON.stringify(value);
const JSON_TYPE = { "content-type": "application/json" };
const FORM_TYPE = { "content-type": "application/x-www-form-urlencoded" };

async function profile(id: string) {
  const response = await fetch(`${base}/api/v2/users/${encodeURIComponent(id)}`, {
    headers: { authorization: `Bearer ${stack.project.apiKey}` },
  });
  return response.status === 200 ? ((await response.json()) as Record<string, unknown>) : undefined;
}

/** Waits until the profile read shows what `matches` looks for. */
const applied = (id: string, matches: (p: Record<string, unknown>) => boolean) =>
  waitFor(`profile ${id}`, async () => {
    const found = await profile(id);
    return found !== undefined && matches(found) ? found : undefined;
  });

beforeAll(async () => {
  stack = await createTestStack("identify_wire");
  base = (await stack.gateway()).url;
  await stack.worker();
});
afterAll(() => stack.close());

describe("credential placement", () => {
  it("accepts auth_token or tracking_api_key in the query, a JSON body or a form body", async () => {
    const token = stack.project.authToken;
    const sent = [
      await post(`/users/track?auth_token=${token}`, json({ id: "cred-1" }), JSON_TYPE),
      await post(`/users/track?tracking_api_key=${token}`, json({ id: "cred-2" }), JSON_TYPE),
      await post("/users/track", json({ auth_token: token, id: "cred-3" })),
      await post("/users/track", json({ id: "cred-4", tracking_api_key: token }), JSON_TYPE),
      await post("/users/track", `auth_token=${encodeURIComponent(token)}&id=cred-5`, FORM_TYPE),
      await post("/users/track", `tracking_api_key=${encodeURIComponent(token)}&id=cred-6`, FORM_TYPE),
      await post(`/users/track?auth_token=${token}`, json({ id: "cred-7", auth_token: token }), JSON_TYPE),
    ];
    for (const reply of sent) expect(reply).toMatchObject({ status: 200, body: SUCCESS });
    for (const n of [1, 2, 3, 4, 5, 6, 7]) await applied(`cred-${n}`, () => true);
  });

  it("never stores a credential given in the body", async () => {
    const token = stack.project.authToken;
    await post("/users/track", json({ auth_token: token, id: "cred-kept-out", data: { plan: "pro" } }), JSON_TYPE);
    await post(
      "/users/track",
      `tracking_api_key=${encodeURIComponent(token)}&id=cred-kept-out&data[city]=Oslo`,
      FORM_TYPE,
    );
    const stored = await applied("cred-kept-out", (p) => (p.data as Record<string, unknown>).city === "Oslo");
    expect(stored.data).toEqual({ plan: "pro", city: "Oslo" });
    expect(JSON.stringify(stored)).not.toContain(token);
  });

  it("answers 401 with the contract's message when none is given, one is wrong, or they disagree", async () => {
    const token = stack.project.authToken;
    const other = await stack.project.keyWith([]);
    for (const [path, body, headers] of [
      ["/users/track", json({ id: "x" }), JSON_TYPE],
      ["/users/track", json({ id: "x", auth_token: "nope" }), JSON_TYPE],
      ["/users/track", json({ id: "x", auth_token: other }), JSON_TYPE],
      ["/users/track", json({ id: "x", auth_token: 12345 }), JSON_TYPE],
      [`/users/track?auth_token=${token}`, json({ id: "x", auth_token: "nope" }), JSON_TYPE],
      [`/users/track?auth_token=${token}&tracking_api_key=nope`, json({ id: "x" }), JSON_TYPE],
      ["/users/track", `auth_token=${encodeURIComponent(token)}&tracking_api_key=nope&id=x`, FORM_TYPE],
    ] as const) {
      expect(await post(path, body, headers), `${path} ${body}`).toMatchObject({ status: 401, body: INVALID_TOKEN });
    }
  });

  it("checks the credential before the body: a bad token is 401 whatever the body, a good one gets the body's 400", async () => {
    expect(await post("/users/track?auth_token=nope", "{not json", JSON_TYPE)).toMatchObject({
      status: 401,
      body: INVALID_TOKEN,
    });
    expect(await post("/users/track", "{not json", JSON_TYPE)).toMatchObject({ status: 401, body: INVALID_TOKEN });
    expect(await post(`/users/track?auth_token=${stack.project.authToken}`, "{not json", JSON_TYPE)).toMatchObject({
      status: 400,
      body: { status: 400, message: "Bad Request" },
    });
  });
});

describe("paths", () => {
  it("answers with Vero's .json suffix too", async () => {
    const reply = await post(
      `/users/track.json?auth_token=${stack.project.authToken}`,
      json({ id: "suffix-1" }),
      JSON_TYPE,
    );
    expect(reply).toMatchObject({ status: 200, body: SUCCESS });
    await applied("suffix-1", () => true);
    const wrongMethod = await fetch(`${base}/api/v2/users/track.json?auth_token=${stack.project.authToken}`);
    expect(wrongMethod.status).toBe(404);
    expect(await wrongMethod.json()).toEqual({ status: 404, message: "The resource doesn't exist" });
  });
});

describe("browsers", () => {
  it("lets a web page call identify, as Vero's browser SDK does, and adds nothing for server clients", async () => {
    const preflight = await fetch(`${base}/api/v2/users/track?tracking_api_key=x`, {
      method: "OPTIONS",
      headers: {
        origin: "https://shop.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("*");
    expect(preflight.headers.get("access-control-allow-methods")).toContain("POST");
    expect(preflight.headers.get("access-control-allow-headers")).toBe("content-type");
    const fromPage = await post(`/users/track?tracking_api_key=${stack.project.authToken}`, json({ id: "browser-1" }), {
      ...JSON_TYPE,
      origin: "https://shop.example",
    });
    expect(fromPage.status).toBe(200);
    const fromServer = await fetch(`${base}/api/v2/users/track?auth_token=${stack.project.authToken}`, {
      method: "POST",
      headers: JSON_TYPE,
      body: json({ id: "server-1" }),
    });
    expect(fromServer.headers.get("access-control-allow-origin")).toBeNull();
    const refused = await fetch(`${base}/api/v2/users/track?auth_token=nope`, {
      method: "POST",
      headers: { origin: "https://shop.example" },
      body: "{}",
    });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("access-control-allow-origin")).toBe("*");
  });
});

describe("body encodings", () => {
  const token = () => stack.project.authToken;

  it("reads JSON whatever parameters its content type carries, and without one", async () => {
    for (const [id, type] of [
      ["enc-1", "application/json; charset=utf-8"],
      ["enc-2", "application/json; encoding=utf-8"],
      ["enc-3", "text/plain"],
    ] as const) {
      expect(
        await post(`/users/track?auth_token=${token()}`, json({ id, data: { via: type } }), { "content-type": type }),
      ).toMatchObject({ status: 200 });
    }
    const unlabeled = await fetch(`${base}/api/v2/users/track?auth_token=${token()}`, {
      method: "POST",
      body: new Blob([json({ id: "enc-4", data: { via: "none" } })]),
    });
    expect(unlabeled.status).toBe(200);
    for (const id of ["enc-1", "enc-2", "enc-3", "enc-4"])
      await applied(id, (p) => (p.data as { via?: string }).via !== undefined);
  });

  it("reads a form body with bracket nesting, keeping values as text", async () => {
    const body = [
      `auth_token=${encodeURIComponent(token())}`,
      "id=form-1",
      "email=form%40example.com",
      "data[age]=20",
      "data[name]=Ada+Lovelace",
      "channels[0][type]=push",
      "channels[0][address]=device-1",
      "channels[0][platform]=ios",
      "extras[created_at]=2026-01-01T00:00:00Z",
    ].join("&");
    expect(await post("/users/track", body, FORM_TYPE)).toMatchObject({ status: 200, body: SUCCESS });
    expect(await applied("form-1", () => true)).toMatchObject({
      email: "form@example.com",
      data: { age: "20", name: "Ada Lovelace" },
      channels: [{ type: "push", address: "device-1", platform: "ios" }],
    });
  });

  it("reads JSON sent with a form content type (curl -d without -H) as JSON, as before forms were read", async () => {
    const body = json({ auth_token: token(), id: "form-json", data: { plan: "pro" } });
    expect(await post("/users/track", body, FORM_TYPE)).toMatchObject({ status: 200, body: SUCCESS });
    expect((await applied("form-json", () => true)).data).toEqual({ plan: "pro" });
  });

  it("reads a form's data field holding a JSON object as that object", async () => {
    const data = encodeURIComponent(json({ plan: "pro", seats: 3 }));
    expect(await post(`/users/track?auth_token=${token()}`, `id=form-2&data=${data}`, FORM_TYPE)).toMatchObject({
      status: 200,
    });
    expect((await applied("form-2", () => true)).data).toEqual({ plan: "pro", seats: 3 });
    const notJson = await post(`/users/track?auth_token=${token()}`, "id=form-3&data=plan%3Dpro", FORM_TYPE);
    expect(notJson).toMatchObject({ status: 400, body: { status: 400, message: "Bad Request" } });
    expect(notJson.detail).toMatch(/data/);
  });

  it("refuses a malformed form with 400 and a form over 256 KiB with 413", async () => {
    const malformed = await post(`/users/track?auth_token=${token()}`, "id=%E0%A4%A", FORM_TYPE);
    expect(malformed).toMatchObject({ status: 400, body: { status: 400, message: "Bad Request" } });
    expect(malformed.detail).toMatch(/percent-encoding/);
    const large = await post(
      `/users/track?auth_token=${token()}`,
      `id=big&data[blob]=${"x".repeat(256 * 1024)}`,
      FORM_TYPE,
    );
    expect(large).toMatchObject({ status: 413, body: { status: 413, message: "Payload Too Large" } });
  });
});

describe("shapes real clients send", () => {
  const track = (body: unknown) => post(`/users/track?auth_token=${stack.project.authToken}`, json(body), JSON_TYPE);

  it("reads one channel given as an object as that channel", async () => {
    const channel = { address: "token-9", device: "Mi", platform: "android", type: "push" };
    expect(await track({ id: "shape-1", channels: channel })).toMatchObject({ status: 200 });
    expect((await applied("shape-1", () => true)).channels).toEqual([
      { type: "push", address: "token-9", platform: "android" },
    ]);
  });

  it("keys id: null with an email by the email, and changes no data for data: null", async () => {
    expect(await track({ id: null, email: "nullid@example.com", data: { plan: "pro" } })).toMatchObject({
      status: 200,
    });
    await applied("nullid@example.com", () => true);
    expect(
      await track({ id: "nullid@example.com", data: null, development_mode: true, phone_number: "+61412345678" }),
    ).toMatchObject({
      status: 200,
    });
    const stored = await applied("nullid@example.com", (p) => p.phone_number !== null);
    expect(stored).toMatchObject({
      id: "nullid@example.com",
      email: "nullid@example.com",
      phone_number: "+61412345678",
      data: { plan: "pro" },
    });
    expect(await track({ id: null })).toMatchObject({ status: 400 });
  });

  it("keeps phone_number last-writer-wins like email", async () => {
    const at = (iso: string, phone: string) =>
      track({ id: "phone-1", phone_number: phone, extras: { created_at: iso } });
    await at("2026-01-02T00:00:00Z", "+15550002");
    await at("2026-01-01T00:00:00Z", "+15550001");
    await at("2026-01-01T12:00:00Z", "+15550003");
    const stored = await applied("phone-1", () => true);
    await waitFor("all three applied", async () => {
      const key = await storedKeyOf(stack.db.sql, stack.project.id, "phone-1");
      const worker = await stack.db.sql`SELECT count(*)::int AS n FROM profiles WHERE key = ${key}`;
      return worker[0]?.n === 1 ? true : undefined;
    });
    expect(stored.phone_number).toBe("+15550002");
  });
});

describe("one identity space", () => {
  it("makes an email-only identify and a later one whose id is that email one profile", async () => {
    const track = (body: unknown) => post(`/users/track?auth_token=${stack.project.authToken}`, json(body), JSON_TYPE);
    expect(await track({ email: "one@example.com", data: { first: 1 } })).toMatchObject({ status: 200 });
    await applied("one@example.com", () => true);
    expect(await track({ id: "one@example.com", data: { second: 2 } })).toMatchObject({ status: 200 });
    const stored = await applied("one@example.com", (p) => (p.data as { second?: number }).second === 2);
    expect(stored).toMatchObject({ id: "one@example.com", email: "one@example.com", data: { first: 1, second: 2 } });
    const rows = await stack.db
      .sql`SELECT key FROM profiles WHERE project_id = ${stack.project.id} AND external_id = 'one@example.com'`;
    expect(rows.map((r) => r.key)).toEqual([await storedKeyOf(stack.db.sql, stack.project.id, "one@example.com")]);
  });
});
