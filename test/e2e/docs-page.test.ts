import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumPresent, CHROMIUM } from "../support/chromium";
import { createTestStack, type TestStack } from "../support/services";

let stack: TestStack;
let browser: Browser;

beforeAll(async () => {
  if (!chromiumPresent) return;
  stack = await createTestStack("docs_page");
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
});
afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

describe.skipIf(!chromiumPresent)("/docs in a browser", () => {
  it("lists every operation of the OpenAPI document", async () => {
    const base = (await stack.gateway()).url;
    const document = (await (await fetch(`${base}/api/v2/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { operationId: string }>>;
    };
    const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => ({ path, method, id: operation.operationId })),
    );
    expect(operations.length).toBeGreaterThanOrEqual(7);

    const page = await browser.newPage();
    await page.goto(`${base}/docs`);
    expect(await page.title()).toMatch(/API/);
    for (const operation of operations) {
      const heading = page.locator(`#${operation.id} h2`);
      await expect(heading.isVisible(), operation.id).resolves.toBe(true);
      const text = (await heading.innerText()).replace(/\s+/g, " ");
      expect(text).toBe(`${operation.method.toUpperCase()} /api/v2${operation.path}`);
      await expect(page.locator(`#${operation.id} pre.example`).innerText(), operation.id).resolves.toMatch(/^curl /);
    }
    const identify = await page.locator("#identifyUser").innerText();
    for (const placement of [
      "auth_token",
      "tracking_api_key",
      "in the body",
      "application/x-www-form-urlencoded",
      "application/json",
    ]) {
      expect(identify, placement).toContain(placement);
    }
    await page.close();
  });
});
