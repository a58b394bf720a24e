import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { childEnv, testConfig } from "../support/env";
import { startChild } from "../support/processes";
import { createTestQueuePrefix } from "../support/queue";
import { waitFor } from "../support/wait";

let db: TestDatabase;
const queue = createTestQueuePrefix("launcher");

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
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
  it("migrates, serves identify end to end with the printed demo credentials, and stops cleanly on Ctrl-C", async () => {
    const port = await freePort();
    const env = childEnv(testConfig(db.url, queue.prefix, { port, logLevel: "warn" }));
    const launcher = startChild("apps/ctl/dist/launcher.js", env, [], false);
    try {
      const output = await waitFor(
        "demo credentials",
        async () => (/api_key[^:]*: (cmk_\S+)/.test(launcher.output()) ? launcher.output() : undefined),
        45_000,
      );
      expect(output).toMatch(/migrations applied: 001_projects_and_credentials\.sql/);
      expect(output).toContain(`http://127.0.0.1:${port}/api/v2`);
      const authToken = /auth_token[^:]*: (cmt_\S+)/.exec(output)?.[1];
      const apiKey = /api_key[^:]*: (cmk_\S+)/.exec(output)?.[1];

      const tracked = await fetch(`http://127.0.0.1:${port}/api/v2/users/track?auth_token=${authToken}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ id: "launch-user", data: { tried: true } }),
      });
      expect(await tracked.json()).toEqual({ status: 200, message: "Success." });
      const profile = await waitFor("the worker to apply it", async () => {
        const response = await fetch(`http://127.0.0.1:${port}/api/v2/users/launch-user`, {
          headers: { authorization: `Bearer ${apiKey}` },
        });
        return response.status === 200 ? response.json() : undefined;
      });
      expect(profile).toMatchObject({ id: "launch-user", data: { tried: true } });
      const demoProfile = await fetch(`http://127.0.0.1:${port}/api/v2/users/demo-user-0001`, {
        headers: { authorization: `${apiKey}` },
      });
      expect(demoProfile.status).toBe(200);
    } finally {
      launcher.child.kill("SIGINT");
    }
    expect(await launcher.exited).toBe(0);
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
  });
});
