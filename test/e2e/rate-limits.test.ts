import { connect, type Socket } from "node:net";
import { startGateway, type RunningGateway } from "@cm/gateway";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testLogger } from "../support/logs";
import { createTestProject } from "../support/project";
import { createTestStack, type TestStack } from "../support/services";

// Per-project limits shared by every gateway (a token bucket in Redis, taken in leases), 429
// with Retry-After and RateLimit-* headers; a cap on open connections; header timeouts.

const RATE = 20;
/** Above what the concurrent requests of these tests open, keep-alive pools included. */
const MAX_CONNECTIONS = 200;

let stack: TestStack;
let first: RunningGateway;
let second: RunningGateway;

beforeAll(async () => {
  stack = await createTestStack("rate_limits", {
    rateLimitPerSecond: RATE,
    rateLimitBurst: RATE,
    httpMaxConnections: MAX_CONNECTIONS,
    httpHeadersTimeoutMs: 1_000,
  });
  first = await stack.gateway();
  second = await startGateway(stack.config, testLogger("rate_limits"));
});
afterAll(async () => {
  await second.stop();
  await stack.close();
});

const track = async (base: string, token: string, id: string) => {
  const response = await fetch(`${base}/api/v2/users/track?auth_token=${token}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ id }),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
};

describe("per-project rate limits", () => {
  it("lets a project send its burst across all gateways, then answers 429 with Retry-After", async () => {
    // All at once, so that the bucket barely refills while they arrive.
    const started = Date.now();
    const replies = await Promise.all(
      Array.from({ length: 3 * RATE }, (_, n) =>
        track(n % 2 === 0 ? first.url : second.url, stack.project.authToken, `limited-${n}`),
      ),
    );
    const accepted = replies.filter((r) => r.status === 200).length;
    // The burst, plus what refilled while the requests were sent: on a busy machine, that is
    // more than a second's worth.
    const refilled = Math.ceil((RATE * (Date.now() - started)) / 1_000);
    expect(accepted).toBeGreaterThanOrEqual(RATE);
    expect(accepted).toBeLessThanOrEqual(RATE + refilled);
    const refused = replies.find((r) => r.status === 429);
    expect(refused?.body).toEqual({ status: 429, message: "Too Many Requests" });
    expect(Number(refused?.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(refused?.headers.get("ratelimit-remaining")).toBe("0");
    const ok = replies.find((r) => r.status === 200);
    expect(ok?.headers.get("ratelimit-limit")).toBe(String(RATE));
    expect(Number(ok?.headers.get("ratelimit-remaining"))).toBeGreaterThanOrEqual(0);
    expect(ok?.headers.get("ratelimit-reset")).not.toBeNull();
  });

  it("names the bucket's capacity as the limit, of which what remains is a part, when the burst is not the rate", async () => {
    const burst = 4 * RATE;
    const gateway = await startGateway({ ...stack.config, rateLimitBurst: burst }, testLogger("rate_limits"));
    try {
      const project = await createTestProject(stack.db.sql, "burst");
      const replies = await Promise.all(
        Array.from({ length: 3 }, (_, n) => track(gateway.url, project.authToken, `burst-${n}`)),
      );
      for (const reply of replies) {
        expect(reply.status).toBe(200);
        expect(reply.headers.get("ratelimit-limit")).toBe(String(burst));
        const remaining = Number(reply.headers.get("ratelimit-remaining"));
        expect(remaining).toBeGreaterThanOrEqual(burst - 3);
        expect(remaining).toBeLessThan(burst);
      }
    } finally {
      await gateway.stop();
    }
  });

  it("limits API-key routes by the same project, and never another project", async () => {
    const read = async () => {
      const response = await fetch(`${first.url}/api/v2/topics`, { headers: { authorization: stack.project.apiKey } });
      return { status: response.status, body: await response.json() };
    };
    const replies = await Promise.all(Array.from({ length: 3 * RATE }, read));
    const limited = replies.find((reply) => reply.status === 429);
    expect(limited?.body).toEqual({ error: "rate_limited" });

    const other = await createTestProject(stack.db.sql, "other tenant");
    expect((await track(first.url, other.authToken, "other-1")).status).toBe(200);
  });
});

describe("connections", () => {
  const open = (url: string) =>
    new Promise<Socket>((resolve, reject) => {
      const { hostname, port } = new URL(url);
      const socket = connect(Number(port), hostname, () => resolve(socket));
      socket.on("error", reject);
    });
  /** Reads (and drops) what the server sends, so that its closing is seen. */
  const closed = (socket: Socket) =>
    new Promise<string>((resolve) => {
      let received = "";
      socket.on("data", (chunk: Buffer) => (received += chunk.toString()));
      socket.once("close", () => resolve(received));
    });

  it("closes a connection that sends its headers too slowly", async () => {
    const socket = await open(first.url);
    socket.write("POST /api/v2/users/track HTTP/1.1\r\nHost: x\r\n");
    const started = Date.now();
    const answer = await closed(socket);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout/);
  });

  it("closes connections past the cap at once", async () => {
    const sockets = await Promise.all(Array.from({ length: MAX_CONNECTIONS }, () => open(second.url)));
    const extra = await open(second.url);
    await closed(extra);
    for (const socket of sockets) socket.destroy();
  });
});
