import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childEnv } from "../support/env";
import { runCtl } from "../support/processes";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";

// Every curl line of the README's quick start, run as written against a started service: each
// answers 2xx. The README speaks of a new database, where the demo project is the first
// (its topic and journey ids are the ones the commands use), and of the service on port 3000.

const README = readFileSync(resolve(import.meta.dirname, "../../README.md"), "utf8");
const ADMIN_TOKEN = "readme-admin-token-0123456789";
const run = promisify(execFile);

/** The quick start's commands: the shell block after the `export` line, continuation lines joined. */
function quickStartCommands(): string[] {
  const start = README.indexOf("After pasting the `export` line");
  const block = /```sh\n([\s\S]*?)```/.exec(README.slice(start))?.[1] ?? "";
  return block
    .replace(/\\\n\s*/g, " ")
    .split("\n")
    .map((line) => line.replace(/\s+#.*$/, "").trim())
    .filter((line) => line.startsWith("curl "));
}

let stack: TestStack;
let base: string;
let credentials: { AUTH_TOKEN: string; API_KEY: string };

beforeAll(async () => {
  stack = await createTestStack("readme", { adminToken: ADMIN_TOKEN });
  base = (await stack.gateway()).url;
  await stack.worker();
  const demo = await runCtl(childEnv(stack.config), ["demo"]);
  const printed = JSON.parse(demo.stdout) as { auth_token: string; api_key: string };
  credentials = { AUTH_TOKEN: printed.auth_token, API_KEY: printed.api_key };
});
afterAll(() => stack.close());

describe("the README's quick start", () => {
  it("has commands for every operation", () => {
    expect(quickStartCommands().length).toBeGreaterThanOrEqual(20);
  });

  it("answers 2xx to every curl line, in order", { timeout: 120_000 }, async () => {
    // createTestStack made a project of its own first: the demo's ids are one topic further.
    const [{ first }] = await stack.db.sql<{ first: number }[]>`
      SELECT min(id)::integer AS first FROM topics WHERE project_id = (SELECT id FROM projects WHERE name = 'Demo project')`;
    const env = {
      PATH: process.env.PATH ?? "",
      API: `${base}/api/v2`,
      ADMIN_TOKEN,
      ...credentials,
    };
    for (const command of quickStartCommands()) {
      const runnable = command
        .replaceAll("http://127.0.0.1:3000", base)
        .replace(/\/topics\/(\d+)/, (_, id: string) => `/topics/${first + Number(id) - 1}`);
      // Reads follow writes the worker applies a moment later.
      const status = await waitFor(
        command,
        async () => {
          const { stdout } = await run("bash", ["-c", `${runnable} -o /dev/null -w '%{http_code}'`], { env });
          return /^2\d\d$/.test(stdout) ? stdout : undefined;
        },
        10_000,
      );
      expect(status, command).toMatch(/^2\d\d$/);
    }
  });
});
