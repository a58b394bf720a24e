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
  it("renders every operation of the OpenAPI document from the gateway's own files, credentials first, aliases beside their operation, with a console to try each", async () => {
    const base = (await stack.gateway()).url;
    const document = (await (await fetch(`${base}/api/v2/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { operationId: string; "x-alias-of"?: string }>>;
    };
    const operations = Object.values(document.paths).flatMap((methods) => Object.values(methods));
    const operationIds = operations
      .filter((operation) => operation["x-alias-of"] === undefined)
      .map((o) => o.operationId);
    const aliasIds = operations.filter((operation) => operation["x-alias-of"] !== undefined).map((o) => o.operationId);
    expect(operationIds.length).toBeGreaterThanOrEqual(20);
    expect(aliasIds).toContain("identifyUserJsonPath");

    const page = await browser.newPage();
    const elsewhere: string[] = [];
    const errors: string[] = [];
    page.on("request", (request) => {
      if (!request.url().startsWith(base) && !request.url().startsWith("data:")) elsewhere.push(request.url());
    });
    page.on("pageerror", (error) => errors.push(error.message));
    // What the Content-Security-Policy refuses is said on the console.
    page.on("console", (message) => {
      if (message.text().includes("Content Security Policy")) errors.push(message.text());
    });
    const answer = await page.goto(`${base}/docs`);
    const headers = answer?.headers() ?? {};
    expect(headers["content-security-policy"]).toMatch(/default-src 'none'.*frame-ancestors 'none'/);
    expect(headers).toMatchObject({ "x-content-type-options": "nosniff", "x-frame-options": "DENY" });
    expect(await page.title()).toMatch(/API reference/);
    await page.locator(".opblock").first().waitFor();

    // The first section says where each credential comes from.
    const info = await page.locator(".information-container").innerText();
    for (const words of ["Where each credential comes from", "project create", "key rotate", "Authorization: Bearer"]) {
      expect(info, words).toContain(words);
    }
    // Grouped by the part of the API, every operation listed (the table of contents).
    const tags = await page.locator(".opblock-tag").allInnerTexts();
    expect(tags.map((tag) => tag.split("\n")[0]?.trim())).toEqual([
      "Profiles",
      "Events",
      "Batch",
      "Service",
      "Topics",
      "Journeys",
    ]);
    // Each operation once; an alias (the `.json` twin, another method) is named beside its operation.
    const shown = await page.locator(".opblock-summary-operation-id").allInnerTexts();
    expect(shown.map((id) => id.trim()).sort()).toEqual([...operationIds].sort());
    const identify = page.locator("#operations-Profiles-identifyUser");
    await identify.locator(".opblock-summary").click();
    await expect.poll(() => identify.innerText()).toContain("POST /users/track.json");
    expect(await identify.innerText()).toContain("identifyUserJsonPath");

    // An operation opens with its example answer and a console.
    await page.locator("#operations-Journeys-listJourneys .opblock-summary").click();
    await page.locator("#operations-Journeys-listJourneys .try-out__btn").waitFor();
    expect(await page.locator("#operations-Journeys-listJourneys .responses-wrapper").innerText()).toContain(
      "next_cursor",
    );
    // The console calls the gateway, within the policy.
    const heartbeat = page.locator("#operations-Service-heartbeat");
    await heartbeat.locator(".opblock-summary").click();
    await heartbeat.locator(".try-out__btn").click();
    await heartbeat.locator(".execute").click();
    await expect
      .poll(async () => heartbeat.locator(".live-responses-table tbody .response-col_status").first().innerText())
      .toContain("200");

    expect(elsewhere).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });
});
