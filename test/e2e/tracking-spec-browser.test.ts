import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumPresent, CHROMIUM } from "../support/chromium";
import { createTestProject, type TestProject } from "../support/project";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";

// The browser SDKs of Segment (@segment/analytics-next) and RudderStack (@rudderstack/analytics-js)
// on a web page of another origin, sending to the tracking spec's /v1 routes (docs/tracking-spec.md):
// every call each makes from a page, read back through the API, with no error in the page.

const resolve = createRequire(import.meta.url).resolve;
/** Segment's standalone bundle loads its chunks from beside itself: the folder is served whole. */
const SEGMENT_DIR = dirname(resolve("@segment/analytics-next/dist/umd/index.js"));
/** RudderStack's build with its plugins bundled, for a page: the UMD beside the CommonJS build its exports name. */
const RUDDER = readFileSync(join(dirname(resolve("@rudderstack/analytics-js/bundled")), "../umd/index.js"), "utf8");

let stack: TestStack;
let gateway: string;
let browser: Browser;
let site: Server;
/** The page each test loads, by path. */
const pages = new Map<string, string>();

/** Segment's settings given inline (`cdnSettings`), as this service serves no CDN; `apiHost` holds /v1. */
const segmentPage = (writeKey: string) => `<!doctype html><html><head><script src="/segment/index.js"></script><script>
  const writeKey = ${JSON.stringify(writeKey)};
  const apiHost = ${JSON.stringify(`${new URL(gateway).host}/v1`)};
  window.done = (async () => {
    const [analytics] = await AnalyticsNext.AnalyticsBrowser.load({
      writeKey,
      cdnSettings: { integrations: { "Segment.io": { apiKey: writeKey, apiHost, protocol: "http" } } },
    });
    // A visitor, anonymous until it signs up: its alias links its anonymousId to its user id.
    // (Once a user is identified, the SDK sends its id as an alias's userId whatever the call names.)
    const sent = [
      await analytics.track("Visited"),
      await analytics.alias("seg-browser"),
      await analytics.identify("seg-browser", { email: "seg-browser@example.com", plan: "pro" }),
      await analytics.track("Viewed Product", { sku: "A-1" }),
      await analytics.page("Docs", "Home", { url: "https://shop.example/docs" }),
      await analytics.screen("Settings"),
      await analytics.group("g-1", { name: "Initech" }),
    ];
    return {
      anonymousId: analytics.user().anonymousId(),
      sent: sent.map((context) => context.failedDelivery()?.reason?.message ?? "delivered"),
    };
  })();
</script></head><body>shop</body></html>`;

/** RudderStack's SDK with its source configuration given inline (getSourceConfig), as this service serves none. */
const rudderPage = (writeKey: string) => `<!doctype html><html><head><script src="/rudder.js"></script><script>
  const source = { id: "shop", name: "Shop", workspaceId: "shop", enabled: true, config: {}, destinations: [] };
  window.done = new Promise((resolve) => {
    const analytics = new rudderanalytics.RudderAnalytics();
    analytics.load(${JSON.stringify(writeKey)}, ${JSON.stringify(gateway)}, { getSourceConfig: () => ({ source }) });
    analytics.ready(() => {
      analytics.identify("rud-browser", { email: "rud-browser@example.com", plan: "pro" });
      analytics.track("Viewed Product", { sku: "A-1" });
      analytics.page("Docs", "Home", { url: "https://shop.example/docs" });
      analytics.group("g-1", { name: "Initech" });
      analytics.alias("rud-browser-2", "rud-browser");
      resolve(["queued"]);
    });
  });
</script></head><body>shop</body></html>`;

beforeAll(async () => {
  if (!chromiumPresent) return;
  stack = await createTestStack("tracking_spec_browser");
  gateway = (await stack.gateway()).url;
  await stack.worker();
  site = createServer((request, response) => {
    const path = request.url ?? "/";
    if (path.startsWith("/segment/")) {
      const file = join(SEGMENT_DIR, path.slice("/segment/".length).replace(/[^\w.-]/g, ""));
      response.writeHead(200, { "content-type": "text/javascript" }).end(readFileSync(file));
    } else if (path === "/rudder.js") {
      response.writeHead(200, { "content-type": "text/javascript" }).end(RUDDER);
    } else {
      response.writeHead(200, { "content-type": "text/html" }).end(pages.get(path) ?? "");
    }
  });
  await new Promise<void>((listening) => site.listen(0, "127.0.0.1", listening));
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"],
  });
});
afterAll(async () => {
  await browser?.close();
  if (site !== undefined) await new Promise((closed) => site.close(closed));
  await stack?.close();
});

/** Loads the page from localhost (the gateway is 127.0.0.1 on another port: another origin); what it returned, and its errors. */
async function runPage(path: string, html: string) {
  pages.set(path, html);
  const tab = await browser.newPage();
  // Chromium says it is offline on a machine whose only interface is loopback (a network
  // namespace: the bare machine), and Segment's SDK then keeps every call for later, unsent,
  // while its promise says delivered: the page is told it is online, as it is, to 127.0.0.1.
  await tab.addInitScript(() => Object.defineProperty(navigator, "onLine", { get: () => true }));
  const errors: string[] = [];
  tab.on("pageerror", (error) => errors.push(error.message));
  tab.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });
  await tab.goto(`http://localhost:${(site.address() as AddressInfo).port}${path}`);
  const result = await tab.evaluate(() => (window as unknown as { done: Promise<unknown> }).done);
  return { result, errors, close: () => tab.close() };
}

async function read(project: TestProject, path: string) {
  const response = await fetch(`${gateway}/api/v2${path}`, { headers: { authorization: project.apiKey } });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** The user's profile and event names, once its events are `names` and its group is set. */
async function stored(project: TestProject, user: string, names: string[]) {
  return waitFor(`profile ${user}`, async () => {
    const events = await read(project, `/users/${user}/events`);
    const stored = (events.body.data as { event_name: string }[] | undefined)?.map((event) => event.event_name);
    const { status, body } = await read(project, `/users/${user}`);
    const done =
      status === 200 &&
      (body.data as { group?: unknown }).group !== undefined &&
      JSON.stringify(stored?.toSorted()) === JSON.stringify(names);
    return done ? body : undefined;
  });
}

describe.skipIf(!chromiumPresent)("the tracking spec's browser SDKs in Chromium", () => {
  it("@segment/analytics-next sends every call from a page of another origin, each stored", async () => {
    const project = await createTestProject(stack.db.sql, "Segment browser");
    const page = await runPage("/segment.html", segmentPage(project.authToken));
    const { anonymousId, sent } = page.result as unknown as { anonymousId: string; sent: string[] };
    expect(sent).toEqual(Array(7).fill("delivered"));
    expect(page.errors).toEqual([]);
    // The anonymous visitor's event is the user's: its alias linked the two.
    const profile = await stored(project, "seg-browser", [
      "Viewed Docs Home Page",
      "Viewed Product",
      "Viewed Settings Screen",
      "Visited",
    ]);
    expect(profile).toMatchObject({
      email: "seg-browser@example.com",
      data: {
        plan: "pro",
        group: { name: "Initech", id: "g-1" },
        language: expect.any(String),
        userAgent: expect.stringContaining("Chrome"),
      },
    });
    expect((await read(project, `/users/${anonymousId}`)).body).toMatchObject({ id: "seg-browser" });
    await page.close();
  });

  it("RudderStack's JavaScript SDK sends every call from a page of another origin, each stored", async () => {
    const project = await createTestProject(stack.db.sql, "RudderStack browser");
    const page = await runPage("/rudder.html", rudderPage(project.authToken));
    expect(page.result).toEqual(["queued"]);
    const profile = await stored(project, "rud-browser", ["Viewed Docs Home Page", "Viewed Product"]);
    expect(profile).toMatchObject({
      email: "rud-browser@example.com",
      data: {
        plan: "pro",
        group: { name: "Initech", id: "g-1" },
        language: expect.any(String),
        userAgent: expect.stringContaining("Chrome"),
      },
    });
    await waitFor("the alias", async () =>
      (await read(project, "/users/rud-browser-2")).status === 200 ? true : undefined,
    );
    expect(page.errors).toEqual([]);
    await page.close();
  });
});
