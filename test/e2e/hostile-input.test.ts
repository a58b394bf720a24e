import { randomBytes } from "node:crypto";
import { Agent, request } from "node:http";
import { gzipSync } from "node:zlib";
import { PROFILE_OPERATIONS_QUEUE, queueName } from "@cm/queue";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestProject, type TestProject } from "../support/project";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";

// Input a hostile or unlucky client sends: each answer is a 4xx in the contract's shape, never
// a 500, and one tenant's bad input never fails another tenant's requests.

const ADMIN_TOKEN = "admin-token-for-hostile-tests-0123";
const BAD_REQUEST = { status: 400, message: "Bad Request" };

let stack: TestStack;
let base: string;

async function track(body: string, token = stack.project.authToken, headers: Record<string, string> = {}) {
  const response = await fetch(`${base}/api/v2/users/track?auth_token=${token}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  return { status: response.status, body: await response.json(), detail: response.headers.get("x-error-detail") };
}

const nested = (levels: number) => `${'{"d":'.repeat(levels)}1${"}".repeat(levels)}`;

async function profile(id: string, project: TestProject = stack.project) {
  const response = await fetch(`${base}/api/v2/users/${id}`, { headers: { authorization: project.apiKey } });
  return {
    status: response.status,
    body: response.status === 200 ? ((await response.json()) as Record<string, unknown>) : undefined,
  };
}

beforeAll(async () => {
  stack = await createTestStack("hostile_input", { adminToken: ADMIN_TOKEN });
  base = (await stack.gateway()).url;
  await stack.worker();
});
afterAll(() => stack.close());

describe("values the service could not store or process", () => {
  it.each([
    ["data nested 40 levels", `{"id":"u","data":${nested(40)}}`, /nest deeper than 32/],
    ["data nested 5,000 levels", `{"id":"u","data":${nested(5_000)}}`, /nest deeper than 32/],
    ["a number past double range", '{"id":"u","data":{"big":1e309}}', /finite/],
    ["an integer id past 2^53", '{"id":9007199254740993}', /2\^53/],
    ["a lone surrogate in the id", '{"id":"a\\ud800"}', /surrogate/],
    ["a lone surrogate in a data key", '{"id":"u","data":{"k\\udc00":1}}', /surrogate/],
    ["a lone surrogate in a data value", '{"id":"u","data":{"k":"\\ud83d"}}', /surrogate/],
    [
      "a lone surrogate in a channel address",
      '{"id":"u","channels":[{"type":"push","address":"\\udfff"}]}',
      /surrogate/,
    ],
    ["a time in year 0000", '{"id":"u","extras":{"created_at":"0000-06-01T00:00:00Z"}}', /from 0001-01-01/],
    ["a time before year 0001 by its offset", '{"id":"u","extras":{"created_at":"0001-01-01T00:00+01:00"}}', /0001/],
  ])("refuses %s with 400 and a reason", async (_, body, reason) => {
    const reply = await track(body);
    expect(reply).toMatchObject({ status: 400, body: BAD_REQUEST });
    expect(reply.detail).toMatch(reason);
  });

  it("keeps a data key __proto__ of a JSON body like any key, as a form has it", async () => {
    const data = '{"__proto__":{"polluted":true},"constructor":"c","toString":"t"}';
    expect(await track(`{"id":"proto-json","data":${data}}`)).toMatchObject({ status: 200 });
    const batch = await fetch(`${base}/api/v2/batch?auth_token=${stack.project.authToken}`, {
      method: "POST",
      body: `{"batch":[{"type":"identify","id":"proto-batch","data":${data}}]}`,
    });
    expect(batch.status).toBe(200);
    const expected = JSON.parse(data) as Record<string, unknown>;
    for (const id of ["proto-json", "proto-batch"]) {
      const read = await waitFor(`${id} applied`, async () => (await profile(id)).body);
      expect(Object.entries(read.data as object).sort()).toEqual(Object.entries(expected).sort());
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("keeps an id past 2^53 exact when it comes as text", async () => {
    expect((await track('{"id":"9007199254740993","data":{"a":1}}')).status).toBe(200);
    expect((await waitFor("profile", async () => (await profile("9007199254740993")).body)).id).toBe(
      "9007199254740993",
    );
  });

  it("accepts a surrogate pair (an emoji), which is well-formed", async () => {
    expect((await track('{"id":"emoji","data":{"mood":"\\ud83d\\ude00"}}')).status).toBe(200);
    expect((await waitFor("profile", async () => (await profile("emoji")).body)).data).toEqual({ mood: "😀" });
  });

  it("applies an identify naming a topic id past the integer range, ignoring that topic", async () => {
    const body =
      '{"id":"topic-range","email":"range@example.com","preferences":{"topics":[{"id":3000000000,"status":"subscribed"}]}}';
    expect((await track(body)).status).toBe(200);
    expect((await waitFor("profile", async () => (await profile("topic-range")).body)).email).toBe("range@example.com");
  });

  it("keeps one tenant's refused bodies from failing another tenant's requests", async () => {
    const other = await createTestProject(stack.db.sql, "noisy neighbour");
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, n) =>
        n % 2 === 0
          ? track(`{"id":"noisy-${n}","data":${nested(4_500)}}`, other.authToken).then(
              (r) => ["other", r.status] as const,
            )
          : track(`{"id":"calm-${n}","data":{"n":${n}}}`).then((r) => ["ours", r.status] as const),
      ),
    );
    expect(results.filter(([who]) => who === "other").every(([, status]) => status === 400)).toBe(true);
    expect(results.filter(([who]) => who === "ours").every(([, status]) => status === 200)).toBe(true);
    await waitFor("calm profiles", async () => ((await profile("calm-59")).body ? true : undefined));
  });
});

describe("malformed requests get a 4xx, never a 500", () => {
  it("answers 404 for a profile id Postgres could not hold", async () => {
    expect(await profile("a%00b")).toMatchObject({ status: 404 });
    expect(await profile("a%ED%A0%80b")).toMatchObject({ status: 404 });
  });

  it("answers 422 for query text Postgres cannot hold and times outside years 0001 to 9999", async () => {
    for (const path of [
      "/users?email=a%00b@example.com",
      "/users?tag=a%00b",
      "/users?updated_since=0000-01-01T00:00:00Z",
      "/users/u/events?event_name=a%00b",
      "/users/u/events?since=0000-01-01T00:00:00Z",
      "/users/u/events?until=0000-01-01T00:00:00Z",
      "/users/u/events?until=-000001-01-01T00:00:00Z",
    ]) {
      const response = await fetch(`${base}/api/v2${path}`, { headers: { authorization: stack.project.apiKey } });
      expect(response.status, path).toBe(422);
      expect(await response.json(), path).toEqual({
        errors: [expect.objectContaining({ message: expect.any(String) })],
      });
    }
  });

  it("answers 400 for a body that is not the gzip it says, and for an unknown encoding", async () => {
    expect(await track("not gzip at all", stack.project.authToken, { "content-encoding": "gzip" })).toMatchObject({
      status: 400,
      body: BAD_REQUEST,
    });
    expect(await track('{"id":"x"}', stack.project.authToken, { "content-encoding": "snappy" })).toMatchObject({
      status: 400,
      body: BAD_REQUEST,
    });
    expect(await track("not brotli at all", stack.project.authToken, { "content-encoding": "br" })).toMatchObject({
      status: 400,
      body: BAD_REQUEST,
    });
    // Content codings are case-insensitive, and x-gzip is gzip (RFC 9110).
    for (const coding of ["gzip", "GZIP", " Gzip ", "x-gzip"]) {
      const zipped = await fetch(`${base}/api/v2/users/track?auth_token=${stack.project.authToken}`, {
        method: "POST",
        headers: { "content-type": "application/json", "content-encoding": coding },
        body: gzipSync('{"id":"zipped"}'),
      });
      expect(zipped.status, coding).toBe(200);
    }
  });

  it("answers a 100 KB query string with 431 in the identify shape", async () => {
    const reply = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const url = new URL(base);
      const sent = request(
        {
          host: url.hostname,
          port: url.port,
          method: "POST",
          path: `/api/v2/users/track?auth_token=${"x".repeat(100_000)}`,
        },
        (response) => {
          let text = "";
          response.on("data", (chunk: Buffer) => (text += chunk.toString()));
          response.on("end", () => resolve({ status: response.statusCode ?? 0, body: text }));
        },
      );
      sent.on("error", reject);
      sent.end("{}");
    });
    expect(reply.status).toBe(431);
    expect(JSON.parse(reply.body)).toEqual({ status: 431, message: "Request Header Fields Too Large" });
  });

  it("keeps x-error-detail short and printable, however long the list of problems", async () => {
    const channels = Array.from({ length: 100 }, () => ({ type: "bad type ✗", address: "" }));
    const reply = await track(JSON.stringify({ id: "u", channels }));
    expect(reply.status).toBe(400);
    expect(reply.detail!.length).toBeLessThanOrEqual(300);
    expect(reply.detail).toMatch(/^[\x20-\x7e]+$/);
  });

  it("never logs a path, which can carry an email", async () => {
    // A raw @ in the path: were paths logged, the end-of-run log scan would find this email.
    expect((await profile("leaky.reader@example.com")).status).toBe(404);
  });
});

describe("headers that keep browsers safe", () => {
  it("sends nosniff and no framing on every answer, and /docs a Content-Security-Policy", async () => {
    for (const path of ["/docs", "/api/v2/openapi.json", "/api/v2/users/track", "/api/v2/topics", "/nowhere"]) {
      const response = await fetch(`${base}${path}`);
      expect(response.headers.get("x-content-type-options"), path).toBe("nosniff");
      expect(response.headers.get("x-frame-options"), path).toBe("DENY");
    }
    const docs = await fetch(`${base}/docs`);
    expect(docs.headers.get("content-security-policy")).toMatch(/default-src 'none'.*frame-ancestors 'none'/);
  });
});

describe("queue dashboard writes", () => {
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
  // node:http, since fetch may not send an Origin or Sec-Fetch-Site header of the caller's choosing.
  const send = (method: string, path: string, headers: Record<string, string>, body?: string) =>
    new Promise<number>((resolve, reject) => {
      const url = new URL(base);
      const sent = request(
        {
          host: url.hostname,
          port: url.port,
          method,
          path: `/admin/queues/api/queues${path}`,
          headers: { ...admin, ...headers },
        },
        (response) => {
          response.resume();
          response.on("end", () => resolve(response.statusCode ?? 0));
        },
      );
      sent.on("error", reject);
      sent.end(body);
    });

  it("never adds jobs by hand, refuses cross-site and form writes, and is read-only by default", async () => {
    // The dashboard's path names the queue: on a Redis Cluster, a hash tag.
    const identify = `/${encodeURIComponent(queueName(PROFILE_OPERATIONS_QUEUE, stack.config.redisCluster !== undefined))}`;
    const job = JSON.stringify({ name: "identify", data: { events: [] } });
    expect(await send("POST", `${identify}/add`, { "content-type": "application/json" }, job)).toBe(403);
    expect(
      await send("POST", `${identify}/add`, { "content-type": "application/x-www-form-urlencoded" }, "name=identify"),
    ).toBe(403);
    expect(await send("PUT", `${identify}/retry/failed`, { origin: "https://evil.example" })).toBe(403);
    expect(await send("PUT", `${identify}/retry/failed`, { "sec-fetch-site": "cross-site" })).toBe(403);
    expect(await send("PUT", `${identify}/retry/failed`, { "content-type": "text/plain" }, "x")).toBe(403);
    expect(await send("PUT", `${identify}/retry/failed`, { origin: base })).toBe(405);
    expect(await send("GET", "", {})).toBe(200);
  });

  it("answers 404, not 500, for an unknown path under the dashboard", async () => {
    for (const path of ["/admin/queues/nope", "/admin/queues/api/nope", "/admin/queues/api/queues/nope/jobs/1"]) {
      const response = await fetch(`${base}${path}`, { headers: admin });
      expect(response.status, path).toBe(404);
    }
  });
});

describe("a body refused before its end leaves a keep-alive connection usable", () => {
  // Past the limit after its first few kilobytes, with a megabyte of compressed bytes still to come.
  const bomb = gzipSync(Buffer.concat([Buffer.alloc(6 * 2 ** 20, "{"), randomBytes(2 ** 20)]));

  /** Two requests on one keep-alive connection: the bomb, then a small valid one. */
  async function bombThenNext(path: string, next: { path: string; body: string }) {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const url = new URL(base);
    const post = (to: string, body: Buffer | string, headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        const sent = request(
          { agent, host: url.hostname, port: url.port, method: "POST", path: to, headers },
          (response) => {
            response.resume();
            response.on("end", () => resolve(response.statusCode ?? 0));
          },
        );
        sent.on("error", reject);
        sent.end(body);
      });
    try {
      const refused = await post(path, bomb, { "content-type": "application/json", "content-encoding": "gzip" });
      const started = Date.now();
      const answered = await post(next.path, next.body, { "content-type": "application/json" });
      return { refused, answered, waitedMs: Date.now() - started };
    } finally {
      agent.destroy();
    }
  }

  it.each([
    ["/v1/batch", 400],
    ["/api/v2/batch", 413],
    ["/api/v2/users/track", 413],
  ])(
    "answers a body declared past the limit at %s with its status, which the client reads, not a broken pipe",
    async (door, status) => {
      // A client still sending when the answer comes sees EPIPE or a reset if the connection is
      // closed under it: an SDK then retries the batch for ever instead of dropping it.
      const body = Buffer.alloc(10 * 2 ** 20, 32);
      for (const path of [door, `${door}?auth_token=${stack.project.authToken}`]) {
        for (let attempt = 0; attempt < 4; attempt += 1) {
          const answered = await fetch(`${base}${path}`, { method: "POST", body }).then(
            (response) => response.status,
            (error: { cause?: { code?: string } }) => error.cause?.code ?? String(error),
          );
          expect(answered, path).toBe(status);
        }
      }
    },
  );

  it.each([
    ["/v1/batch", 400],
    ["/api/v2/batch", 413],
    ["/api/v2/users/track", 413],
  ])("answers %s, then the next request on the connection", async (door, status) => {
    const path = door.startsWith("/v1") ? door : `${door}?auth_token=${stack.project.authToken}`;
    const next = { path: `/api/v2/users/track?auth_token=${stack.project.authToken}`, body: '{"id":"after-bomb"}' };
    const reply = await bombThenNext(path, next);
    expect(reply).toMatchObject({ refused: status, answered: 200 });
    // The next request must not wait out the request timeout behind the bytes left unread.
    expect(reply.waitedMs).toBeLessThan(stack.config.httpRequestTimeoutMs);
  });
});
