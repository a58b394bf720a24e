import { readFileSync } from "node:fs";
import { request, type ClientRequest, type IncomingMessage } from "node:http";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { childEnv } from "../support/env";
import { startChild } from "../support/processes";
import { createTestProject } from "../support/project";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";

// A gateway holds at most BODY_BYTES_IN_FLIGHT of request bodies at once (here its minimum,
// 256 KiB); a request past it is turned away before its body is read.

let stack: TestStack;
let base: URL;

beforeAll(async () => {
  stack = await createTestStack("body_budget", { bodyBytesInFlight: 256 * 1024 });
  base = new URL((await stack.gateway()).url);
});
afterAll(() => stack.close());

function start(body: string): {
  sent: ClientRequest;
  answer: Promise<{ status: number; headers: IncomingMessage["headers"]; body: string }>;
} {
  let sent!: ClientRequest;
  const answer = new Promise<{ status: number; headers: IncomingMessage["headers"]; body: string }>(
    (resolve, reject) => {
      sent = request(
        {
          host: base.hostname,
          port: base.port,
          method: "POST",
          path: `/api/v2/users/track?auth_token=${stack.project.authToken}`,
          headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) },
        },
        (response) => {
          let text = "";
          response.on("data", (chunk: Buffer) => (text += chunk.toString()));
          response.on("end", () =>
            resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text }),
          );
        },
      );
      sent.on("error", reject);
    },
  );
  return { sent, answer };
}

describe("bodies in flight", () => {
  it("turns a request away with 503 and Retry-After while others hold the budget, and takes it again after", async () => {
    const large = JSON.stringify({ id: "large", data: { blob: "x".repeat(200_000) } });
    const first = start(large);
    // A body holds what has arrived of it.
    first.sent.write(large.slice(0, -1000));
    await new Promise((resolve) => setTimeout(resolve, 200));

    const second = start(large);
    second.sent.end(large);
    const refused = await second.answer;
    expect(refused.status).toBe(503);
    expect(refused.headers["retry-after"]).toBe("1");
    expect(JSON.parse(refused.body)).toEqual({ status: 503, message: "Service Unavailable" });
    // Turned away by design: logged as a rejection with its reason, not as a failure of ours.
    const logged = readFileSync(join(inject("logDir"), "body_budget.log"), "utf8")
      .split("\n")
      .filter((line) => line.includes(String(refused.headers["x-request-id"])))
      .map((line) => JSON.parse(line) as { level: number; msg: string; status?: number; reason?: string });
    expect(logged).toContainEqual(expect.objectContaining({ level: 30, msg: "request rejected", status: 503 }));
    expect(logged.find((line) => line.msg === "request rejected")?.reason).toMatch(/BODY_BYTES_IN_FLIGHT/);
    expect(logged.filter((line) => line.level >= 50)).toEqual([]);

    first.sent.end(large.slice(-1000));
    expect((await first.answer).status).toBe(200);
    const third = start(large);
    third.sent.end(large);
    expect((await third.answer).status).toBe(200);
  });
});

/** Headers announcing a body, and only `sent` of it: the request waits on the rest. */
function stall(
  url: URL,
  path: string,
  headers: Record<string, string>,
  sent: Buffer | string,
): { sent: ClientRequest; answer: Promise<{ status: number; ms: number }> } {
  const started = Date.now();
  let request_!: ClientRequest;
  const answer = new Promise<{ status: number; ms: number }>((resolve) => {
    request_ = request({ host: url.hostname, port: url.port, method: "POST", path, headers }, (response) => {
      response.resume();
      response.on("end", () => resolve({ status: response.statusCode ?? 0, ms: Date.now() - started }));
    });
    // A connection the server closes without an answer.
    request_.on("error", () => resolve({ status: 0, ms: Date.now() - started }));
    request_.flushHeaders();
    request_.write(sent);
  });
  return { sent: request_, answer };
}

describe("bodies that would starve the others", () => {
  let attacked: TestStack;
  let url: URL;
  const JSON_HEADERS = { "content-type": "application/json" };
  const announced = (bytes: number) => ({ ...JSON_HEADERS, "content-length": String(bytes) });

  beforeAll(async () => {
    // 2 MiB of bodies: a project may hold 512 KiB, the unverified 256 KiB between them.
    attacked = await createTestStack("body_budget_attacks", {
      bodyBytesInFlight: 2 * 1024 * 1024,
      bodyReadTimeoutMs: 1_000,
      unverifiedBodyBytesPerSecond: 512 * 1024,
    });
    url = new URL((await attacked.gateway()).url);
  });
  afterAll(() => attacked.close());

  const track = async (token: string, body: object) =>
    (
      await fetch(`${url.origin}/api/v2/users/track?auth_token=${token}`, {
        method: "POST",
        headers: JSON_HEADERS,
        body: JSON.stringify(body),
      })
    ).status;

  it("answers a bad token in the query at once, without reading the body", async () => {
    const bogus = stall(url, "/api/v2/users/track?auth_token=cmt_1_bogus", announced(256 * 1024), "{");
    const answer = await bogus.answer;
    expect(answer.status).toBe(401);
    expect(answer.ms).toBeLessThan(900);
    bogus.sent.destroy();
  });

  it("lets slow bodies whose credential is in the body hold only what they sent, and cuts them off", async () => {
    const slow = Array.from({ length: 12 }, () =>
      stall(url, "/api/v2/users/track", announced(256 * 1024), '{"auth_token":"cmt_1_bogus","data":{"x":"'),
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await track(attacked.project.authToken, { id: "meanwhile", data: { blob: "y".repeat(200_000) } })).toBe(200);
    // Cut off by the body deadline, not by the 30 s request timeout.
    for (const answer of await Promise.all(slow.map((s) => s.answer))) {
      expect(answer.status).toBe(408);
      expect(answer.ms).toBeLessThan(5_000);
    }
    slow.forEach((s) => s.sent.destroy());
  });

  it("counts what a body parses into: one body of 256 KiB of {} is served alone, not many at once", async () => {
    const objects = JSON.stringify({ id: "objects", data: { list: Array.from({ length: 40_000 }, () => ({})) } });
    const answers = await Promise.all(
      Array.from(
        { length: 6 },
        async () =>
          (
            await fetch(`${url.origin}/api/v2/users/track?auth_token=${attacked.project.authToken}`, {
              method: "POST",
              headers: JSON_HEADERS,
              body: objects,
            })
          ).status,
      ),
    );
    expect(answers).toContain(503);
    expect(
      (
        await fetch(`${url.origin}/api/v2/users/track?auth_token=${attacked.project.authToken}`, {
          method: "POST",
          headers: JSON_HEADERS,
          body: objects,
        })
      ).status,
    ).toBe(200);
  });

  it("reads bodies whose credential is in them at a bounded rate; those with it in the query are not held to it", async () => {
    const inBody = (n: number) =>
      fetch(`${url.origin}/api/v2/users/track`, {
        method: "POST",
        headers: JSON_HEADERS,
        body: JSON.stringify({
          auth_token: attacked.project.authToken,
          id: `rate-${n}`,
          data: { blob: "r".repeat(200_000) },
        }),
      }).then((response) => response.status);
    // One after another, so that the budget's share is never what refuses them.
    const flood: number[] = [];
    for (let n = 0; n < 6; n++) flood.push(await inBody(n));
    expect(flood).toContain(503);
    expect(await track(attacked.project.authToken, { id: "query", data: { blob: "q".repeat(200_000) } })).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await inBody(99)).toBe(200);
  });
});

describe("what a body costs before it is parsed", () => {
  const JSON_TYPE = { "content-type": "application/json" };
  /** A 5 MiB batch body of arrays nested each in the one before, under `auth_token`. */
  const nestedArrays = (authToken: string) => {
    const open = `{"auth_token":${JSON.stringify(authToken)},"batch":`;
    const levels = Math.floor((5 * 1024 * 1024 - open.length - 1) / 2);
    return `${open}${"[".repeat(levels)}${"]".repeat(levels)}}`;
  };
  const postBatch = async (origin: string, body: string) => {
    const response = await fetch(`${origin}/api/v2/batch`, { method: "POST", headers: JSON_TYPE, body });
    return { status: response.status, detail: response.headers.get("x-error-detail") };
  };

  it("refuses a bad token in the body before parsing it: the gateway's peak memory stays far below what parsing takes", async () => {
    // Parsing one such body builds 2.6 million arrays, about 160 MiB; reading it takes about 15.
    const env = childEnv(
      { ...stack.config, port: 0, logLevel: "info" },
      { UNVERIFIED_BODY_BYTES_PER_SECOND: "67108864" },
    );
    const gateway = startChild("apps/gateway/dist/main.js", env);
    try {
      const origin = await waitFor(
        "the gateway to listen",
        async () => /"url":"(http:[^"]+)"/.exec(gateway.output())?.[1],
      );
      const peakMiB = () =>
        Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${gateway.child.pid}/status`, "utf8"))?.[1]) / 1024;
      const bogus = nestedArrays("cmt_1_bogus");
      expect((await postBatch(origin, bogus)).status).toBe(401);
      const before = peakMiB();
      for (let n = 0; n < 2; n++) expect((await postBatch(origin, bogus)).status).toBe(401);
      expect(peakMiB() - before).toBeLessThan(64);
    } finally {
      gateway.child.kill("SIGKILL");
      await gateway.exited;
    }
  });

  it("refuses a body nested deeper than any operation may be before parsing it, with the credential in it", async () => {
    expect(await postBatch(base.origin, nestedArrays(stack.project.authToken))).toEqual({
      status: 400,
      detail: "JSON must not nest deeper than 32 levels",
    });
  });
});

describe("what holding bodies without sending them can cost others", () => {
  let shared: TestStack;
  let url: URL;
  const JSON_HEADERS = { "content-type": "application/json" };
  /** Headers of a gzip body announced and never sent: it may inflate to its format's most. */
  const GZIP_IDLE = { ...JSON_HEADERS, "content-encoding": "gzip", "content-length": "10" };

  beforeAll(async () => {
    // 2 MiB of bodies. The body deadline leaves the requests below time to be answered while the
    // stalled ones are still held, on a busy machine too.
    shared = await createTestStack("body_budget_shared", {
      bodyBytesInFlight: 2 * 1024 * 1024,
      bodyReadTimeoutMs: 5_000,
    });
    url = new URL((await shared.gateway()).url);
  });
  afterAll(() => shared.close());

  const post = async (path: string, body: object, headers: Record<string, string> = {}) =>
    (
      await fetch(`${url.origin}${path}`, {
        method: "POST",
        headers: { ...JSON_HEADERS, ...headers },
        body: JSON.stringify(body),
      })
    ).status;
  const settled = () => new Promise((resolve) => setTimeout(resolve, 300));
  /** Waits until the gateway's bodies hold `bytes`: the stalled requests have sent what they will. */
  const heldAtLeast = async (bytes: number) => {
    const { bodyBudget } = (await shared.gateway()).deps;
    await waitFor(`bodies in flight to hold ${bytes} bytes`, async () => (bodyBudget.held >= bytes ? true : undefined));
  };

  it("lets no anonymous connection that announces a compressed batch and sends nothing turn away the bodies with their credential inside", async () => {
    const token = shared.project.authToken;
    const idle = stall(url, "/v1/batch", GZIP_IDLE, "");
    await settled();
    expect(await post("/api/v2/users/track", { auth_token: token, id: "in-body" })).toBe(200);
    expect(await post("/v1/track", { writeKey: token, userId: "in-body", event: "Seen" })).toBe(200);
    expect(await post("/api/v2/batch", { auth_token: token, batch: [{ type: "identify", id: "in-body" }] })).toBe(200);
    // It was held all along, until the body deadline.
    expect((await idle.answer).status).toBe(408);
  });

  it("cuts off an anonymous client that sent most of a large body and stalls, to make room for another client", async () => {
    const large = JSON.stringify({
      batch: [{ type: "identify", id: "big", data: { blob: "b".repeat(3 * 1024 * 1024) } }],
    });
    // More than the budget: a request alone fits whatever its size.
    const hog = stall(
      url,
      "/v1/batch",
      { ...JSON_HEADERS, "content-length": String(large.length), "x-forwarded-for": "203.0.113.7" },
      large.slice(0, 2.5 * 1024 * 1024),
    );
    await heldAtLeast(2.5 * 1024 * 1024);
    const body = { auth_token: shared.project.authToken, id: "another-client", data: { blob: "c".repeat(100_000) } };
    expect(await post("/api/v2/users/track", body, { "x-forwarded-for": "198.51.100.2" })).toBe(200);
    expect((await hog.answer).status).toBe(503);
  });

  it("counts a compressed body as what it inflates to as it arrives: a project's stalled ones starve it, never another", async () => {
    const other = await createTestProject(shared.db.sql, "other");
    const zipped = gzipSync(JSON.stringify({ id: "z", data: { blob: "z".repeat(250_000) } }));
    const headers = { ...JSON_HEADERS, "content-encoding": "gzip", "content-length": String(zipped.length) };
    // Nine gzip bodies of about 300 bytes, all but their trailers sent: 2.2 MB inflated, 2.8 MB
    // with their decompressors, more than the budget. Six fit; the seventh is refused, and
    // releases what it held, and so are the others.
    const held = Array.from({ length: 9 }, () =>
      stall(url, `/api/v2/users/track?auth_token=${shared.project.authToken}`, headers, zipped.subarray(0, -8)),
    );
    await heldAtLeast(6 * 300_000);
    const body = (id: string) => ({ id, data: { blob: "w".repeat(240_000) } });
    const track = (token: string, id: string) => post(`/api/v2/users/track?auth_token=${token}`, body(id));
    expect(await track(shared.project.authToken, "same-project")).toBe(503);
    expect(await track(other.authToken, "other-project")).toBe(200);
    const answers = (await Promise.all(held.map((h) => h.answer))).map((answer) => answer.status);
    // Those refused for want of room, or cut off to make it for the other project; the rest by the deadline.
    expect(answers).toContain(503);
    expect(answers.filter((status) => status !== 503).every((status) => status === 408)).toBe(true);
    expect(await track(shared.project.authToken, "after")).toBe(200);
  });

  const fourProjects = () => Promise.all([1, 2, 3, 4].map((n) => createTestProject(shared.db.sql, `attacker ${n}`)));

  it("lets no four projects' idle compressed bodies turn away a fifth project", async () => {
    const idle = (await fourProjects()).flatMap((project) =>
      [1, 2, 3].map(() => stall(url, `/api/v2/users/track?auth_token=${project.authToken}`, GZIP_IDLE, "")),
    );
    await settled();
    expect(await post(`/api/v2/users/track?auth_token=${shared.project.authToken}`, { id: "victim" })).toBe(200);
    for (const answer of await Promise.all(idle.map((request) => request.answer))) expect(answer.status).toBe(408);
  });

  it("cuts off the latest body of the project holding the most when four projects fill the budget and stall", async () => {
    const partial = JSON.stringify({ id: "stalled", data: { blob: "s".repeat(250_000) } });
    const stalled = (await fourProjects()).flatMap((project, n) =>
      Array.from({ length: 3 + n }, () =>
        stall(
          url,
          `/api/v2/users/track?auth_token=${project.authToken}`,
          { ...JSON_HEADERS, "content-length": String(partial.length) },
          partial.slice(0, 200_000),
        ),
      ),
    );
    // Each holds what it sent: some were refused, or cut off to make room for another project.
    await heldAtLeast(2 * 1024 * 1024 - 256 * 1024);
    const body = { id: "victim", data: { blob: "v".repeat(200_000) } };
    expect(await post(`/api/v2/users/track?auth_token=${shared.project.authToken}`, body)).toBe(200);
    const answers = (await Promise.all(stalled.map((request) => request.answer))).map((answer) => answer.status);
    expect(answers).toContain(503);
    expect(answers.filter((status) => status !== 503).every((status) => status === 408)).toBe(true);
  });
});
