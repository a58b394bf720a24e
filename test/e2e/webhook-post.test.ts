import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { postWebhook } from "@cm/app";

/** A local receiver answering as `answer` does; what it was sent, and whether its answers were cut off. */
async function receiver(answer: (request: IncomingMessage, response: ServerResponse) => void) {
  const received: { headers: IncomingMessage["headers"]; body: string }[] = [];
  let answersCutOff = 0;
  const server: Server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => (body += chunk.toString()));
    request.on("end", () => {
      received.push({ headers: request.headers, body });
      response.on("close", () => {
        if (!response.writableFinished) answersCutOff += 1;
      });
      answer(request, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    answersCutOff: () => answersCutOff,
  };
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

const LOOPBACK_ALLOWED = { allowPrivateNetworks: true, connectTimeoutMs: 2_000, timeoutMs: 2_000 };

describe("a webhook POST", () => {
  it("sends the headers and body given, and returns the endpoint's status", async () => {
    const ok = await receiver((_request, response) => response.writeHead(204).end());
    const answer = await postWebhook(ok.url, { "webhook-id": "msg_1" }, '{"changes":[]}', LOOPBACK_ALLOWED);
    expect(answer).toEqual({ status: 204 });
    expect(ok.received).toEqual([
      { headers: expect.objectContaining({ "webhook-id": "msg_1", "content-length": "14" }), body: '{"changes":[]}' },
    ]);
  });

  it("follows no redirect: a 3xx is the endpoint's answer", async () => {
    const elsewhere = await receiver((_request, response) => response.writeHead(200).end());
    const redirecting = await receiver((_request, response) =>
      response.writeHead(307, { location: elsewhere.url }).end(),
    );
    expect(await postWebhook(redirecting.url, {}, "{}", LOOPBACK_ALLOWED)).toEqual({ status: 307 });
    expect(elsewhere.received).toEqual([]);
  });

  it("reads a few KiB of an endless answer, then drops it", async () => {
    const flooding = await receiver((_request, response) => {
      response.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, "x");
      const more = () => {
        while (!response.destroyed && response.write(chunk));
        if (!response.destroyed) response.once("drain", more);
      };
      more();
    });
    expect(await postWebhook(flooding.url, {}, "{}", LOOPBACK_ALLOWED)).toEqual({ status: 200 });
    await expect.poll(flooding.answersCutOff).toBe(1);
  });

  it("gives up on an endpoint that never answers after the timeout", async () => {
    const silent = await receiver(() => undefined);
    const answer = await postWebhook(silent.url, {}, "{}", { ...LOOPBACK_ALLOWED, timeoutMs: 200 });
    expect(answer).toEqual({ error: "no answer within 200 ms" });
    expect(silent.received).toHaveLength(1);
  });

  it("refuses a loopback or private address, by IP or by name, unless allowed, and sends nothing", async () => {
    const local = await receiver((_request, response) => response.writeHead(200).end());
    const refused = { ...LOOPBACK_ALLOWED, allowPrivateNetworks: false };
    const byName = local.url.replace("127.0.0.1", "localhost");
    for (const url of [local.url, byName]) {
      const answer = await postWebhook(url, {}, "{}", refused);
      expect(answer).toEqual({ error: expect.stringContaining("WEBHOOK_ALLOW_PRIVATE_NETWORKS=true allows them") });
    }
    expect(local.received).toEqual([]);
    expect(await postWebhook(byName, {}, "{}", LOOPBACK_ALLOWED)).toEqual({ status: 200 });
  });

  it("says why when the host does not resolve or nothing listens", async () => {
    expect(await postWebhook("http://no-such-host.invalid/", {}, "{}", LOOPBACK_ALLOWED)).toEqual({
      error: expect.stringMatching(/^cannot resolve no-such-host\.invalid/),
    });
    const gone = await receiver(() => undefined);
    const url = gone.url;
    const server = servers.pop() as Server;
    await new Promise((resolve) => server.close(resolve));
    expect(await postWebhook(url, {}, "{}", LOOPBACK_ALLOWED)).toEqual({ error: "ECONNREFUSED" });
  });
});
