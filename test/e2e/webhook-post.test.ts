import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { postWebhook, type Resolve } from "@cm/app";
import { hostAddresses, ownAddressesOnly, type ConnectGuard } from "../support/own-addresses-only";

/**
 * A local receiver answering as `answer` does; what it was sent, and whether its answers were cut
 * off. On 127.0.0.1, or on every interface (`::`).
 */
async function receiver(answer: (request: IncomingMessage, response: ServerResponse) => void, host = "127.0.0.1") {
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
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  servers.push(server);
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    port: (server.address() as AddressInfo).port,
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
      expect(answer).toEqual({ error: expect.stringContaining("WEBHOOK_ALLOW_PRIVATE_NETWORKS=true allows") });
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

describe("a webhook POST's addresses, every connection of this process guarded to this machine's", () => {
  let guard: ConnectGuard;
  beforeAll(() => {
    guard = ownAddressesOnly();
  });
  afterAll(() => guard.release());
  const REFUSED = { ...LOOPBACK_ALLOWED, allowPrivateNetworks: false };
  const ok = (_request: IncomingMessage, response: ServerResponse) => response.writeHead(200).end();
  /** A resolver of names ending in .test, answering `answers` in turn (the last one from then on), and its calls. */
  const testResolver = (...answers: string[][]) => {
    const calls: string[] = [];
    const resolve: Resolve = async (hostname) => {
      calls.push(hostname);
      const addresses = answers[Math.min(calls.length, answers.length) - 1] ?? [];
      return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
    };
    return { resolve, calls };
  };
  /** This host's addresses but loopback and link-local (which need a zone): 192.0.2.2 and fd00::2 here. */
  const ownAddresses = hostAddresses()
    .filter(({ address }) => !address.startsWith("fe80:"))
    .map(({ address }) => address);

  /** Refused as an address of this host, or as in the private range it is in: 192.0.2.2 the one, fd00::2 the other here. */
  const OWN_REFUSED =
    /^\S+ is (an address of this host|in \S+ \((private-use|shared address space|unique-local)\)); WEBHOOK_ALLOW_PRIVATE_NETWORKS=true allows /;

  // A host whose only interface is loopback (a network namespace: the bare machine) has no other address to protect.
  it.skipIf(ownAddresses.length === 0)(
    "refuses the host's own addresses, however spelled, and sends nothing; the switch allows them",
    async () => {
      const everywhere = await receiver(ok, "::");
      const urls = ownAddresses.flatMap((address) => {
        if (address.includes(":")) return [`http://[${address}]:${everywhere.port}/`];
        const decimal = address.split(".").reduce((sum, byte) => sum * 256 + Number(byte), 0);
        return [`http://${address}:${everywhere.port}/`, `http://${decimal}:${everywhere.port}/`];
      });
      for (const url of urls) {
        const answer = await postWebhook(url, {}, "{}", REFUSED);
        expect(answer, url).toEqual({
          error: expect.stringMatching(OWN_REFUSED),
        });
      }
      const byName = testResolver(ownAddresses);
      expect(await postWebhook(`http://own.test:${everywhere.port}/`, {}, "{}", REFUSED, byName.resolve)).toEqual({
        error: expect.stringMatching(/^own\.test resolves only to addresses webhooks do not reach: .*; WEBHOOK_ALLOW_/),
      });
      expect(everywhere.received).toEqual([]);
      expect(guard.dialled).toEqual([]);
      expect(await postWebhook(urls[0]!, {}, "{}", LOOPBACK_ALLOWED)).toEqual({ status: 200 });
      expect(guard.refused).toEqual([]);
    },
  );

  it("refuses a name resolving only to special-purpose addresses, dialling none of them", async () => {
    const guardBefore = guard.dialled.length;
    const special = [
      "192.0.2.1",
      "198.51.100.1",
      "203.0.113.1",
      "198.18.0.1",
      "169.254.169.254",
      "2001:db8::1",
      "0.0.0.0",
    ];
    const reserved = testResolver(special);
    const answer = await postWebhook("https://hooks.test/in", {}, "{}", LOOPBACK_ALLOWED, reserved.resolve);
    expect(answer).toEqual({
      error:
        "hooks.test resolves only to addresses webhooks do not reach: 192.0.2.1 is in 192.0.2.0/24 (documentation), " +
        "198.51.100.1 is in 198.51.100.0/24 (documentation), 203.0.113.1 is in 203.0.113.0/24 (documentation), " +
        "198.18.0.1 is in 198.18.0.0/15 (benchmarking), 169.254.169.254 is in 169.254.0.0/16 (link-local), " +
        "2001:db8::1 is in 2001:db8::/32 (documentation), 0.0.0.0 is in 0.0.0.0/8 (this network), which no setting allows",
    });
    for (const address of special.filter((address) => !address.includes(":"))) {
      expect(await postWebhook(`http://${address}/`, {}, "{}", LOOPBACK_ALLOWED), address).toEqual({
        error: expect.stringMatching(/, which no setting allows$/),
      });
    }
    expect(guard.dialled.length).toBe(guardBefore);
    expect(guard.refused).toEqual([]);
  });

  it("resolves a name once and dials only the address checked: a name that rebinds changes nothing", async () => {
    const local = await receiver(ok);
    const guardBefore = guard.dialled.length;
    // Checked as 127.0.0.1 (allowed with the switch), then 0.0.0.0 (this host, never allowed).
    const rebinding = testResolver(["127.0.0.1"], ["0.0.0.0"]);
    const url = `http://rebind.test:${local.port}/hook`;
    expect(await postWebhook(url, {}, "{}", LOOPBACK_ALLOWED, rebinding.resolve)).toEqual({ status: 200 });
    expect(rebinding.calls).toEqual(["rebind.test"]);
    expect(guard.dialled.slice(guardBefore)).toEqual(["127.0.0.1"]);
    expect(local.received).toHaveLength(1);
    expect(await postWebhook(url, {}, "{}", LOOPBACK_ALLOWED, rebinding.resolve)).toEqual({
      error: expect.stringMatching(
        /^rebind\.test resolves only to addresses webhooks do not reach: 0\.0\.0\.0 is in 0\.0\.0\.0\/8/,
      ),
    });
    expect(guard.dialled.slice(guardBefore)).toEqual(["127.0.0.1"]);
    expect(guard.refused).toEqual([]);
  });
});
