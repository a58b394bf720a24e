import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { consumerConnection, profileOperationsQueues } from "@cm/queue";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childEnv } from "../support/env";
import { runCtl } from "../support/processes";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";

// Every curl line of the README's quick start, run once as written against a started service,
// as a reader pasting the block runs it: each answers 2xx. The README speaks of a new database,
// where the demo project is the first (its topic and journey ids are the ones the commands use),
// and of the service on port 3000.

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
let env: Record<string, string>;
let firstTopic: number;

/** Runs one command line with bash against this test's gateway: its HTTP status, or why it failed. */
async function runCommand(command: string): Promise<string> {
  const runnable = command
    .replaceAll("http://127.0.0.1:3000", base)
    .replace(/\/topics\/(\d+)/, (_, id: string) => `/topics/${firstTopic + Number(id) - 1}`);
  try {
    const { stdout } = await run("bash", ["-c", `${runnable} -o /dev/null -w '%{http_code}'`], { env });
    return stdout;
  } catch (error) {
    // `curl -f` exits 22 on a 4xx or 5xx answer, having said which.
    const { stdout, stderr } = error as { stdout: string; stderr: string };
    return `${stdout} ${stderr}`.trim();
  }
}

/** GET requests the gateway has answered 404, from its /metrics. */
async function notFoundReads(): Promise<number> {
  const metrics = await (await fetch(`${base}/metrics`)).text();
  return metrics
    .split("\n")
    .filter((line) => /^http_request_duration_seconds_count\{method="GET",.*status="404"\}/.test(line))
    .reduce((sum, line) => sum + Number(line.split(" ").pop()), 0);
}

beforeAll(async () => {
  stack = await createTestStack("readme", { adminToken: ADMIN_TOKEN });
  base = (await stack.gateway()).url;
  await stack.worker();
  const demo = await runCtl(childEnv(stack.config), ["demo"]);
  const printed = JSON.parse(demo.stdout) as { auth_token: string; api_key: string };
  env = {
    PATH: process.env.PATH ?? "",
    API: `${base}/api/v2`,
    ADMIN_TOKEN,
    AUTH_TOKEN: printed.auth_token,
    API_KEY: printed.api_key,
  };
  // createTestStack made a project of its own first: the demo's ids are one topic further.
  const [{ first }] = await stack.db.sql<{ first: number }[]>`
    SELECT min(id)::integer AS first FROM topics WHERE project_id = (SELECT id FROM projects WHERE name = 'Demo project')`;
  firstTopic = first;
});
afterAll(() => stack.close());

describe("the README's quick start", () => {
  it("has commands for every operation", () => {
    expect(quickStartCommands().length).toBeGreaterThanOrEqual(20);
  });

  it("reads the user it has just written, once the worker has applied the write", { timeout: 60_000 }, async () => {
    const [write, read] = quickStartCommands() as [string, string];
    expect(write).toContain("/users/track");
    expect(read).toContain('/users/user-1"');
    // Held in the queue until the read has been answered 404 at least once: the moment a
    // reader who pastes the block can meet, made certain.
    const connection = consumerConnection(stack.config);
    const queues = profileOperationsQueues(connection, stack.config.queuePrefix, stack.config.intakeQueueShards);
    try {
      await Promise.all(queues.map((queue) => queue.pause()));
      expect(await runCommand(write)).toBe("200");
      const notFoundBefore = await notFoundReads();
      const reading = runCommand(read);
      await waitFor("the read answered 404", async () => ((await notFoundReads()) > notFoundBefore ? true : undefined));
      await Promise.all(queues.map((queue) => queue.resume()));
      expect(await reading, read).toMatch(/^2\d\d$/);
    } finally {
      await Promise.all(queues.map((queue) => queue.resume().then(() => queue.close())));
      connection.disconnect();
    }
  });

  it("answers 2xx to every curl line, each run once, in order", { timeout: 120_000 }, async () => {
    for (const command of quickStartCommands()) {
      expect(await runCommand(command), command).toMatch(/^2\d\d$/);
    }
  });
});
