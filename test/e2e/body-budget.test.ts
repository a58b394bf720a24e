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
    first.sent.write(large.slice(0, 1000));
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

    first.sent.end(large.slice(1000));
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

  it("lets slow bodies whose credential is in the body hold a small share only, and cuts them off", async () => {
    const slow = Array.from({ length: 12 }, () =>
      stall(url, "/api/v2/users/track", announced(256 * 1024), '{"auth_token":"cmt_1_bogus","data":{"x":"'),
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    // The slow ones hold what they may; the project's own requests still have room.
    expect(await track(attacked.project.authToken, { id: "meanwhile", data: { blob: "y".repeat(200_000) } })).toBe(200);
    const answers = await Promise.all(slow.map((s) => s.answer));
    expect(answers.filter((a) => a.status === 503).length).toBeGreaterThan(0);
    // Those let in are cut off by the body deadline, not by the 30 s request timeout.
    for (const answer of answers.filter((a) => a.status !== 503)) {
      expect(answer.status).toBe(408);
      expect(answer.ms).toBeLessThan(5_000);
    }
    slow.forEach((s) => s.sent.destroy());
  });

  it("counts a compressed body as the most it may inflate to, within its project's share", async () => {
    const other = await createTestProject(attacked.db.sql, "other");
    const zipped = gzipSync(JSON.stringify({ id: "z", data: { blob: "z".repeat(250_000) } }));
    const headers = { ...JSON_HEADERS, "content-encoding": "gzip", "content-length": String(zipped.length) };
    // Two stalled gzip bodies of about 300 bytes each hold the project's 512 KiB share.
    const held = [0, 1].map(() =>
      stall(url, `/api/v2/users/track?auth_token=${attacked.project.authToken}`, headers, zipped.subarray(0, 10)),
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await track(attacked.project.authToken, { id: "same-project" })).toBe(503);
    expect(await track(other.authToken, { id: "other-project" })).toBe(200);
    await Promise.all(held.map((h) => h.answer));
    expect(await track(attacked.project.authToken, { id: "after" })).toBe(200);
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
