import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWebhookEndpoint } from "@cm/app";
import { hostAddresses, ownAddressesOnly, type ConnectGuard } from "../support/own-addresses-only";
import { createTestStack, type TestStack } from "../support/services";
import { sendAccepted } from "../support/users-api";
import { waitFor } from "../support/wait";

// The SSRF of issue 44: with private networks refused, an endpoint at the worker host's own
// non-loopback address reached every service of the host bound to all interfaces. The worker
// runs in this process, every connection of which is guarded to this machine's addresses.

const secretKey = randomBytes(32);
let guard: ConnectGuard;
let stack: TestStack;
let server: Server;
const received: string[] = [];

beforeAll(async () => {
  guard = ownAddressesOnly();
  server = createServer((request, response) => {
    received.push(request.url ?? "");
    response.writeHead(200).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "::", resolve));
  stack = await createTestStack("webhook_own_address", {
    webhooks: {
      secretKey: secretKey.toString("base64"),
      allowPrivateNetworks: false,
      batchSize: 10,
      concurrency: 2,
      connectTimeoutMs: 5_000,
      timeoutMs: 5_000,
      retryBaseDelayMs: 20,
      retryMaxDelayMs: 100,
      parkAfterS: 259_200,
      pollMs: 50,
    },
  });
  await stack.worker();
});
afterAll(async () => {
  await stack.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  guard.release();
});

/** A non-loopback IPv4 address of this host (192.0.2.2 here). */
const own = hostAddresses().find(({ family }) => family === "IPv4")?.address;

describe("a webhook worker refusing private networks", () => {
  // A host whose only interface is loopback (a network namespace: the bare machine) has no other address to protect.
  it.skipIf(own === undefined)(
    "never delivers to an address of its own host, and says why in the endpoint's last error",
    async () => {
      // Created where the switch was on, or before the check at creation: the worker's check is the one that holds.
      const { endpoint } = await createWebhookEndpoint(
        { sql: stack.db.sql, secretKey, allowPrivateNetworks: true },
        stack.project.id,
        { url: `http://${own}:${(server.address() as AddressInfo).port}/hook`, types: null },
      );
      await sendAccepted((await stack.gateway()).url, stack.project.authToken, "/users/track", { id: "own-1" });
      const lastError = await waitFor("the refusal recorded, or a delivery", async () => {
        const [row] = await stack.db.sql<{ last_error: string | null }[]>`
        SELECT last_error FROM webhook_endpoints WHERE id = ${endpoint.id}`;
        return (row?.last_error ?? undefined) || (received.length > 0 ? "delivered" : undefined);
      });
      expect(received).toEqual([]);
      expect(lastError).toMatch(new RegExp(`^${own!.replaceAll(".", "\\.")} is `));
      expect(lastError).toContain("; WEBHOOK_ALLOW_PRIVATE_NETWORKS=true allows ");
      expect(guard.refused).toEqual([]);
    },
  );
});
