import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createRequire } from "node:module";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumPresent, CHROMIUM } from "../support/chromium";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";

// Vero's browser SDK, @getvero/tracking, as a web page of another origin runs it against us:
// its identify, its "Visited site" event and a tracked event, with CORS, and no error in the page.

const TRACKER = readFileSync(createRequire(import.meta.url).resolve("@getvero/tracking/dist/index.window.js"), "utf8");

let stack: TestStack;
let browser: Browser;
let site: Server;

/** A shop's page on an origin of its own, loading the SDK as its README says (a script tag). */
function page(gateway: string, token: string): string {
  return `<!doctype html><html><head><script src="/tracking.js"></script><script>
    vero.tracker.init({ trackingApiKey: ${JSON.stringify(token)}, trackingApiBaseUrl: ${JSON.stringify(gateway)} });
    window.done = (async () => {
      await vero.tracker.user.identify({ id: "browser-user", email: "browser@example.com", data: { plan: "pro" } });
      await vero.tracker.event.track({ eventName: "Viewed Product", data: { sku: "A-1" } });
      return "tracked";
    })();
  </script></head><body>shop</body></html>`;
}

beforeAll(async () => {
  if (!chromiumPresent) return;
  stack = await createTestStack("tracking_browser");
  const gateway = (await stack.gateway()).url;
  await stack.worker();
  site = createServer((request, response) => {
    if (request.url === "/tracking.js") {
      response.writeHead(200, { "content-type": "text/javascript" }).end(TRACKER);
    } else {
      response.writeHead(200, { "content-type": "text/html" }).end(page(gateway, stack.project.authToken));
    }
  });
  await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"],
  });
});
afterAll(async () => {
  await browser?.close();
  if (site !== undefined) await new Promise((resolve) => site.close(resolve));
  await stack?.close();
});

describe.skipIf(!chromiumPresent)("@getvero/tracking in Chromium", () => {
  it("identifies a user and tracks its events from a page of another origin, with no error in the page", async () => {
    const tab = await browser.newPage();
    const errors: string[] = [];
    tab.on("pageerror", (error) => errors.push(error.message));
    tab.on("console", (message) => {
      if (message.type() === "error") errors.push(message.text());
    });
    // The page is served as localhost, the gateway as 127.0.0.1 on another port: another origin.
    await tab.goto(`http://localhost:${(site.address() as AddressInfo).port}/`);
    expect(await tab.evaluate(() => (window as unknown as { done: Promise<string> }).done)).toBe("tracked");
    expect(errors).toEqual([]);

    const base = (await stack.gateway()).url;
    const read = async (path: string) =>
      (await fetch(`${base}/api/v2${path}`, { headers: { authorization: stack.project.apiKey } })).json();
    const events = await waitFor("the events", async () => {
      const page = await read("/users/browser-user/events");
      return page.data?.length === 2 ? page.data : undefined;
    });
    expect(events.map((event: { event_name: string }) => event.event_name).sort()).toEqual([
      "Viewed Product",
      "Visited site",
    ]);
    expect(events.find((event: { event_name: string }) => event.event_name === "Viewed Product")).toMatchObject({
      data: { sku: "A-1" },
      source: "localhost",
    });
    expect(await read("/users/browser-user")).toMatchObject({
      email: "browser@example.com",
      data: { plan: "pro" },
      event_count: 2,
    });
    await tab.close();
  });
});
