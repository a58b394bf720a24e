import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { childEnv, testConfig } from "../support/env";
import { startChild, type ChildService } from "../support/processes";
import { createTestQueuePrefix } from "../support/queue";
import { waitFor } from "../support/wait";

let db: TestDatabase;
const queue = createTestQueuePrefix("launcher");
/** What the first start printed, which later starts must print again. */
let firstStart: { topicIds: number[]; journeyIds: number[] };

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Starts `npm start`'s launcher and waits for everything it prints. */
async function launch(
  port: number,
  env: Record<string, string> = {},
): Promise<{ launcher: ChildService; output: string }> {
  const launcher = startChild(
    "apps/ctl/dist/launcher.js",
    childEnv(testConfig(db.url, queue.prefix, { port, logLevel: "warn" }), env),
    [],
    false,
  );
  const output = await waitFor(
    "the launcher's try-out lines",
    async () => (/Try it/.test(launcher.output()) ? launcher.output() : undefined),
    45_000,
  ).catch((error: unknown) => {
    launcher.child.kill("SIGINT");
    throw error;
  });
  return { launcher, output };
}

/** The ids on a line such as `  topic ids: 1 "Newsletter", 2 "Product updates"`. */
function printedIds(output: string, what: "topic" | "journey"): number[] {
  const line = new RegExp(`${what} ids: (.*)`).exec(output)?.[1] ?? "";
  return [...line.matchAll(/(\d+) "/g)].map((match) => Number(match[1]));
}

async function dashboardStatus(port: number, headers: Record<string, string> = {}): Promise<number> {
  return (await fetch(`http://127.0.0.1:${port}/admin/queues`, { headers })).status;
}

beforeAll(async () => {
  db = await createTestDatabase("launcher");
  await db.sql`DROP SCHEMA public CASCADE`;
  await db.sql`CREATE SCHEMA public`;
});
afterAll(async () => {
  await queue.cleanup();
  await db.drop();
});

describe("npm start (the launcher)", () => {
  it("migrates, serves every operation with what it prints, and stops cleanly on Ctrl-C", async () => {
    const port = await freePort();
    const api = `http://127.0.0.1:${port}/api/v2`;
    const { launcher, output } = await launch(port);
    try {
      expect(output).toMatch(/migrations applied: 001_projects_and_credentials\.sql/);
      expect(output).toContain(api);
      const authToken = /auth_token[^:]*: (cmt_\S+)/.exec(output)?.[1];
      const apiKey = /api_key[^:]*: (cmk_\S+)/.exec(output)?.[1];
      const adminToken = /ADMIN_TOKEN: (\S+)/.exec(output)?.[1];

      const tracked = await fetch(`${api}/users/track?auth_token=${authToken}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ id: "launch-user", data: { tried: true } }),
      });
      expect(await tracked.json()).toEqual({ status: 200, message: "Success." });
      const profile = await waitFor("the worker to apply it", async () => {
        const response = await fetch(`${api}/users/launch-user`, { headers: { authorization: `Bearer ${apiKey}` } });
        return response.status === 200 ? response.json() : undefined;
      });
      expect(profile).toMatchObject({ id: "launch-user", data: { tried: true } });
      const demoProfile = await fetch(`${api}/users/demo-user-0001`, { headers: { authorization: `${apiKey}` } });
      expect(demoProfile.status).toBe(200);
      // The demo shows the whole profile lifecycle: tags and the global opt-out too.
      const tagged = await fetch(`${api}/users/demo-user-0088`, { headers: { authorization: `${apiKey}` } });
      expect(await tagged.json()).toMatchObject({ tags: ["beta", "vip"], unsubscribed: true });

      const topicIds = printedIds(output, "topic");
      const topics = await fetch(`${api}/topics`, { headers: { authorization: `Bearer ${apiKey}` } });
      expect(((await topics.json()) as { data: { id: number }[] }).data.map((topic) => topic.id)).toEqual(topicIds);
      expect(topicIds).toHaveLength(3);
      const journeyIds = printedIds(output, "journey");
      expect(journeyIds).toHaveLength(3);
      for (const id of journeyIds) {
        const journey = await fetch(`${api}/journeys/${id}`, { headers: { authorization: `Bearer ${apiKey}` } });
        expect(journey.status).toBe(200);
      }
      firstStart = { topicIds, journeyIds };

      expect(await dashboardStatus(port, { authorization: `Bearer ${adminToken}` })).toBe(200);
      expect(await dashboardStatus(port)).toBe(401);
    } finally {
      launcher.child.kill("SIGINT");
    }
    expect(await launcher.exited).toBe(0);
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
  });

  it("prints the same demo ids again, and keeps an ADMIN_TOKEN set in the environment without printing it", async () => {
    const port = await freePort();
    const adminToken = "launcher-test-admin-token-0123456789";
    const { launcher, output } = await launch(port, { ADMIN_TOKEN: adminToken });
    try {
      expect(printedIds(output, "topic")).toEqual(firstStart.topicIds);
      expect(printedIds(output, "journey")).toEqual(firstStart.journeyIds);
      expect(output).toContain("ADMIN_TOKEN: the one set in the environment (not shown)");
      expect(output).not.toContain(adminToken);
      expect(await dashboardStatus(port, { authorization: `Bearer ${adminToken}` })).toBe(200);
    } finally {
      launcher.child.kill("SIGINT");
    }
    expect(await launcher.exited).toBe(0);
  });
});
