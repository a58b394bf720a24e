import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "@cm/config";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { childEnv, testConfig } from "../support/env";
import { startChild, type ChildService } from "../support/processes";
import { createTestQueuePrefix } from "../support/queue";
import { waitFor } from "../support/wait";

let db: TestDatabase;
const queue = createTestQueuePrefix("launcher");
/** The launcher's folder for this file's starts (the state it keeps, the services' log). */
const dataDir = mkdtempSync(join(tmpdir(), "cm-launcher-"));
/** What the first start printed, which later starts must print again. */
let firstStart: { topicIds: number[]; journeyIds: number[]; exported: string };

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts `npm start`'s launcher and waits for everything it prints. Its services log at info, so
 * that their start-up lines reach its log file whatever Redis the suite runs on (only a Redis
 * without an append-only file makes them warn).
 */
async function launch(
  port: number,
  env: Record<string, string> = {},
): Promise<{ launcher: ChildService; output: string }> {
  const launcher = startChild(
    "apps/ctl/dist/launcher.js",
    childEnv(testConfig(db.url, queue.prefix, { port, logLevel: "info" }), { CM_DATA_DIR: dataDir, ...env }),
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
  // Empty: the launcher migrates it. Not sharded under TEST_CITUS (the launcher's subject is
  // the services it starts), and not emptied by dropping `public`, which Citus refuses once sharded.
  db = await createTestDatabase("launcher", { migrated: false });
});
afterAll(async () => {
  await queue.cleanup();
  await db.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** The `export …` line, and the values it sets. */
function exportedLine(output: string): { line: string; values: Record<string, string> } {
  const line = /^ {2}export (.*)$/m.exec(output)?.[1] ?? "";
  return { line, values: Object.fromEntries(line.split(" ").map((pair) => pair.split("=") as [string, string])) };
}

describe("npm start (the launcher)", () => {
  it("refuses a port something else answers on, before it prints any credential", async () => {
    // As a launcher left running would answer: 200 on /readyz.
    const other = createHttpServer((_request, response) => response.end("ok"));
    const port = await new Promise<number>((resolve) =>
      other.listen(0, "127.0.0.1", () => resolve((other.address() as { port: number }).port)),
    );
    try {
      const launcher = startChild(
        "apps/ctl/dist/launcher.js",
        childEnv(testConfig(db.url, queue.prefix, { port, logLevel: "warn" }), { CM_DATA_DIR: dataDir }),
        [],
        false,
      );
      expect(await launcher.exited).toBe(1);
      expect(launcher.output()).toContain(`launcher failed: port ${port} is in use`);
      expect(launcher.output()).not.toMatch(/auth_token|Try it/);
    } finally {
      other.close();
    }
  });

  it("migrates, serves every operation with what it prints, and stops cleanly on Ctrl-C", async () => {
    const port = await freePort();
    const api = `http://127.0.0.1:${port}/api/v2`;
    const { launcher, output } = await launch(port);
    try {
      expect(output).toMatch(/migrations applied: 001_projects_and_credentials\.sql/);
      expect(output).toContain(api);
      const exported = exportedLine(output);
      const { AUTH_TOKEN: authToken, API_KEY: apiKey, ADMIN_TOKEN: adminToken } = exported.values;
      expect(authToken).toBe(/auth_token[^:]*: (cmt_\S+)/.exec(output)?.[1]);
      expect(apiKey).toBe(/api_key[^:]*: (cmk_\S+)/.exec(output)?.[1]);
      expect(adminToken).toBe(/ADMIN_TOKEN: (\S+)/.exec(output)?.[1]);
      // Webhooks' signing secrets are sealed under a key it made and keeps, its owner's only.
      const webhookKeyFile = exported.values.WEBHOOK_SECRET_KEY_FILE as string;
      expect(webhookKeyFile).toBe(join(dataDir, "webhook-secret.key"));
      expect(statSync(webhookKeyFile).mode & 0o777).toBe(0o600);
      expect(loadConfig({ WEBHOOK_SECRET_KEY_FILE: webhookKeyFile }).webhooks.secretKey).toBeDefined();
      // The services' log lines go to the file it names, not among what it prints.
      expect(output).not.toMatch(/"level":/);
      expect(output).toContain(join(dataDir, "services.log"));
      expect(readFileSync(join(dataDir, "services.log"), "utf8")).toMatch(/"level":/);

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
      firstStart = { topicIds, journeyIds, exported: exported.line };

      expect(await dashboardStatus(port, { authorization: `Bearer ${adminToken}` })).toBe(200);
      expect(await dashboardStatus(port)).toBe(401);
    } finally {
      launcher.child.kill("SIGINT");
    }
    expect(await launcher.exited).toBe(0);
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
  });

  it("leaves no service running when it is killed outright (SIGKILL)", async () => {
    const port = await freePort();
    const { launcher } = await launch(port);
    const services = execFileSync("pgrep", ["-P", String(launcher.child.pid)], { encoding: "utf8" })
      .trim()
      .split("\n")
      .map(Number);
    expect(services).toHaveLength(2);
    launcher.child.kill("SIGKILL");
    await launcher.exited;
    const running = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    await waitFor("the gateway and the worker to stop", async () => (services.some(running) ? undefined : true));
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
  });

  it("prints the same credentials and ids again, and keeps an ADMIN_TOKEN set in the environment without printing it", async () => {
    const port = await freePort();
    const adminToken = "launcher-test-admin-token-0123456789";
    const { launcher, output } = await launch(port, { ADMIN_TOKEN: adminToken });
    try {
      expect(printedIds(output, "topic")).toEqual(firstStart.topicIds);
      expect(printedIds(output, "journey")).toEqual(firstStart.journeyIds);
      // The same credentials as the first start, which do not pile up; no ADMIN_TOKEN to export.
      expect(`${exportedLine(output).line} `).toBe(`${firstStart.exported.replace(/ADMIN_TOKEN=\S+/, "")}`);
      const [{ working }] = await db.sql<{ working: number }[]>`
        SELECT count(*)::integer AS working FROM credentials WHERE revoked_at IS NULL`;
      expect(working).toBe(2);
      expect(output).toContain("ADMIN_TOKEN: the one set in the environment (not shown)");
      expect(output).not.toContain(adminToken);
      expect(await dashboardStatus(port, { authorization: `Bearer ${adminToken}` })).toBe(200);
    } finally {
      launcher.child.kill("SIGINT");
    }
    expect(await launcher.exited).toBe(0);
  });
});
