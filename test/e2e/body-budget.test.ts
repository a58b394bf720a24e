import { request, type ClientRequest, type IncomingMessage } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestStack, type TestStack } from "../support/services";

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

    first.sent.end(large.slice(1000));
    expect((await first.answer).status).toBe(200);
    const third = start(large);
    third.sent.end(large);
    expect((await third.answer).status).toBe(200);
  });
});
