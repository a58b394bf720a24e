import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntilApplied } from "../support/applied";
import { createTestStack, type TestStack } from "../support/services";

// A property fuzzer over every endpoint: random methods, paths, credentials, headers and
// bodies (well-formed, half-formed and garbage; JSON, forms, text, gzip claims). Every answer
// must come within five seconds and be no 500, and every identify answered 200 must land.

let stack: TestStack;
let base: string;
let topicId: number;

beforeAll(async () => {
  stack = await createTestStack("fuzz_endpoints", { adminToken: "fuzz-admin-token-0123456789" });
  base = (await stack.gateway()).url;
  await stack.worker();
  topicId = await stack.project.topic("Fuzzed");
});
afterAll(() => stack.close());

const text = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: "grapheme", maxLength: 8 }),
  fc.string({ unit: "binary", maxLength: 8 }),
  fc.constantFrom("", "%00", "a%00b", "%E0%A4%A", "%ED%A0%80", "..", "😀", "\ud800", "1e309", "9007199254740993"),
);
const anyJson = fc.jsonValue({ maxDepth: 4 });
/** Mostly well-formed fields, so that many identifies are accepted, with a share of every kind of wrong. */
const often = <T, U>(right: fc.Arbitrary<T>, wrong: fc.Arbitrary<U>) =>
  fc.oneof({ arbitrary: right, weight: 4 }, { arbitrary: wrong, weight: 1 });
const key = fc.stringMatching(/^[a-z_]{1,10}$/);
const identifyFields = fc.record(
  {
    id: often(
      fc.oneof(fc.stringMatching(/^[A-Za-z0-9@._-]{1,20}$/), fc.integer({ min: 0 })),
      fc.oneof(fc.constant(null), text, anyJson),
    ),
    email: often(fc.emailAddress(), fc.oneof(text, fc.constant(null))),
    phone_number: often(fc.stringMatching(/^\+[0-9]{6,12}$/), fc.oneof(text, fc.constant(null))),
    channels: often(
      fc.array(
        fc.record({
          type: fc.constantFrom("push", "sms"),
          address: fc.stringMatching(/^[a-z0-9]{1,16}$/),
          platform: fc.constantFrom("ios", "android", null),
        }),
        { maxLength: 3 },
      ),
      fc.oneof(fc.record({ type: fc.constant("push"), address: text }), anyJson),
    ),
    data: often(
      fc.dictionary(key, anyJson, { maxKeys: 5 }),
      fc.oneof(fc.constant(null), fc.dictionary(text, anyJson, { maxKeys: 3 }), anyJson),
    ),
    extras: often(
      fc.record(
        {
          created_at: fc
            .date({ min: new Date("2020-01-01"), max: new Date("2026-01-01"), noInvalidDate: true })
            .map((d) => d.toISOString()),
          update_only: fc.boolean(),
        },
        { requiredKeys: [] },
      ),
      fc.oneof(
        fc.record({ created_at: fc.oneof(text, fc.integer()), update_only: text }, { requiredKeys: [] }),
        anyJson,
      ),
    ),
    // The fields of the other users-API operations (identify ignores them).
    changes: often(fc.dictionary(key, anyJson, { maxKeys: 3 }), anyJson),
    add: often(fc.array(fc.stringMatching(/^[a-z ]{0,8}$/), { maxLength: 3 }), fc.oneof(text, anyJson)),
    remove: often(fc.array(fc.stringMatching(/^[a-z ]{0,8}$/), { maxLength: 3 }), fc.oneof(text, anyJson)),
    new_id: often(fc.stringMatching(/^[A-Za-z0-9]{1,10}$/), fc.oneof(text, anyJson)),
    preferences: often(
      fc.record({
        topics: fc.array(
          fc.record({ id: fc.integer({ min: 1, max: 5 }), status: fc.constantFrom("subscribed", "unsubscribed") }),
          { maxLength: 3 },
        ),
      }),
      fc.record({
        topics: fc.array(
          fc.record({ id: fc.oneof(fc.integer(), text), status: fc.constantFrom("maybe", "subscribed") }),
          { maxLength: 3 },
        ),
      }),
    ),
  },
  { requiredKeys: [] },
);

const formText = (value: unknown) =>
  value !== null && typeof value === "object" ? JSON.stringify(value) : String(value);
/** encodeURIComponent cannot encode a lone surrogate: such text goes as the bytes a client would send for it. */
const encode = (text: string) => encodeURIComponent(text.toWellFormed());

/** Form encoding of a flat-ish object, with bracket nesting one level down. */
function formOf(fields: Record<string, unknown>): string {
  const pairs: string[] = [];
  const pair = (name: string, value: unknown) => pairs.push(`${encode(name)}=${encode(formText(value))}`);
  for (const [key, value] of Object.entries(fields)) {
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      for (const [inner, innerValue] of Object.entries(value)) pair(`${key}[${inner}]`, innerValue);
    } else {
      pair(key, value);
    }
  }
  return pairs.join("&");
}

const anyBody = fc.oneof(
  identifyFields.map((fields) => ({ kind: "identify" as const, fields })),
  anyJson.map((value) => ({ kind: "json" as const, value })),
  text.map((raw) => ({ kind: "raw" as const, raw })),
  fc.constant({ kind: "none" as const }),
);
const headersOf = {
  contentType: fc.constantFrom(
    "application/json",
    "application/json; charset=utf-8",
    "application/x-www-form-urlencoded",
    "text/plain",
    "multipart/form-data",
    "garbage/type",
    null,
  ),
  contentEncoding: fc.constantFrom(null, null, null, "gzip", "deflate", "snappy"),
  revision: fc.constantFrom(null, "2023-01-01", "2020-01-01", "someday"),
};

/** Any endpoint, any method. */
const anyRequest = fc.record({
  method: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"),
  path: fc.oneof(
    fc.constantFrom(
      "/api/v2/users/track",
      "/api/v2/users/track.json",
      "/api/v2/users/edit",
      "/api/v2/users/tags/edit.json",
      "/api/v2/users/unsubscribe",
      "/api/v2/users/resubscribe.json",
      "/api/v2/users/reidentify",
      "/api/v2/users/delete",
      "/api/v2/topics",
      "/api/v2",
      "/api/v2/openapi.json",
      "/healthz",
      "/readyz",
      "/docs",
      "/metrics",
      "/admin/queues/api/queues",
    ),
    text.map((id) => `/api/v2/users/${id}`),
    fc.oneof(text, fc.constant("TOPIC")).map((id) => `/api/v2/topics/${id}`),
    text.map((id) => `/api/v2/journeys/${id}`),
    text.map((id) => `/api/v2/journeys/${id}/messages`),
    text.map((tail) => `/${tail}`),
  ),
  credential: fc.constantFrom(
    "token-query",
    "token-body",
    "tracking-query",
    "bad-token",
    "api-key",
    "bearer-key",
    "none",
  ),
  ...headersOf,
  body: anyBody,
});

/** Identify, the busiest endpoint, with bodies that are often nearly right. */
const identifyRequest = fc.record({
  method: fc.constant("POST"),
  path: fc.constantFrom("/api/v2/users/track", "/api/v2/users/track.json"),
  credential: often(
    fc.constantFrom("token-query", "token-body", "tracking-query"),
    fc.constantFrom("bad-token", "none"),
  ),
  ...headersOf,
  contentEncoding: often(fc.constant(null), fc.constantFrom("gzip", "deflate", "snappy")),
  body: fc.oneof(
    { arbitrary: identifyFields.map((fields) => ({ kind: "identify" as const, fields })), weight: 4 },
    { arbitrary: anyBody, weight: 1 },
  ),
});

const request = fc.oneof({ arbitrary: identifyRequest, weight: 3 }, { arbitrary: anyRequest, weight: 2 });

type FuzzRequest = typeof request extends fc.Arbitrary<infer T> ? T : never;

/**
 * The user id a body would name if accepted, as the gateway derives it (a form sends null
 * as the text "null", and a lone surrogate as the U+FFFD that encode() made of it).
 */
function userIdOf(fields: Record<string, unknown>, form: boolean): string | null {
  const given = (value: unknown) => value !== undefined && (form || value !== null);
  const id = given(fields.id) ? fields.id : fields.email;
  if (form && id !== undefined) return formText(id).toWellFormed();
  return typeof id === "string" || typeof id === "number" ? String(id) : null;
}

describe("every endpoint, fuzzed", () => {
  it(
    "answers every request within 5 s with no 500, and applies every identify it acknowledged",
    { timeout: 180_000 },
    async () => {
      const acknowledged = new Set<string>();
      const statuses = new Map<number, number>();
      const send = async (r: FuzzRequest) => {
        const token = stack.project.authToken;
        const query = new URLSearchParams();
        const headers: Record<string, string> = {};
        if (r.credential === "token-query") query.set("auth_token", token);
        if (r.credential === "tracking-query") query.set("tracking_api_key", token);
        if (r.credential === "bad-token") query.set("auth_token", "cmt_1_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
        if (r.credential === "api-key") headers.authorization = stack.project.apiKey;
        if (r.credential === "bearer-key") headers.authorization = `Bearer ${stack.project.apiKey}`;
        if (r.contentType !== null) headers["content-type"] = r.contentType;
        if (r.contentEncoding !== null) headers["content-encoding"] = r.contentEncoding;
        if (r.revision !== null) headers.revision = r.revision;

        let body: string | undefined;
        let fields: Record<string, unknown> | null = null;
        if (r.body.kind === "identify") {
          fields = r.credential === "token-body" ? { ...r.body.fields, auth_token: token } : r.body.fields;
          body = r.contentType === "application/x-www-form-urlencoded" ? formOf(fields) : JSON.stringify(fields);
        } else if (r.body.kind === "json") {
          body = JSON.stringify(r.body.value);
        } else if (r.body.kind === "raw") {
          body = r.body.raw;
        }
        const canHaveBody = !["GET", "HEAD", "OPTIONS"].includes(r.method);
        const path = r.path.replace("TOPIC", String(topicId));
        const url = `${base}${path.split("?")[0]}${query.size > 0 ? `?${query}` : ""}`;
        let response: Response;
        try {
          response = await fetch(url, {
            method: r.method,
            headers,
            body: canHaveBody ? body : undefined,
            signal: AbortSignal.timeout(5_000),
          });
        } catch (error) {
          // An invalid URL or header value is refused by fetch itself, before any request is sent.
          if (error instanceof TypeError) return;
          throw error;
        }
        await response.arrayBuffer();
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        expect(response.status, `${r.method} ${url} ${JSON.stringify(headers)} ${body?.slice(0, 300)}`).not.toBe(500);
        expect(response.status).toBeLessThan(500);
        const identify = /^\/api\/v2\/users\/track(\.json)?$/.test(path) && r.method === "POST";
        if (identify && response.status === 200 && fields !== null) {
          const key = userIdOf(fields, r.contentType === "application/x-www-form-urlencoded");
          expect(key, "an accepted identify names a profile").not.toBeNull();
          acknowledged.add(key as string);
        }
      };

      await fc.assert(fc.asyncProperty(request, send), { numRuns: Number(process.env.FUZZ_RUNS ?? 600) });
      // Acknowledged identifies land, as a profile or, for update_only ones, as the row that keeps them.
      await waitUntilApplied(stack.db.sql, stack.project.id, [...acknowledged], 30_000);
      expect(statuses.get(200) ?? 0, JSON.stringify([...statuses])).toBeGreaterThan(0);
    },
  );
});
