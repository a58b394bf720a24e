import { once } from "node:events";
import { createWriteStream, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { profileOperationsQueues, producerConnection } from "@cm/queue";
import { childEnv } from "../support/env";
import { runCtl } from "../support/processes";
import { createTestStack, type TestStack } from "../support/services";

// `ctl import` streams: a file larger than the ctl's whole heap imports with its memory flat.
// No worker here: the test counts what is queued (ctl-import.test.ts drains imports with one).

const LINES = 200_000;
const HEAP_MB = 48;

let stack: TestStack;
let dir: string;

beforeAll(async () => {
  stack = await createTestStack("ctl_import_large");
  dir = mkdtempSync(join(tmpdir(), "ctl-import-large-"));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await stack.close();
});

it(`imports a file larger than the ctl's heap (--max-old-space-size=${HEAP_MB})`, async () => {
  const file = join(dir, "large.ndjson");
  const out = createWriteStream(file);
  const padding = "x".repeat(200);
  for (let n = 0; n < LINES; n += 1) {
    const line = JSON.stringify({
      type: "profile",
      id: `big-${n}`,
      email: `big-${n}@example.com`,
      data: { n, padding },
    });
    if (!out.write(`${line}\n`)) await once(out, "drain");
  }
  out.end();
  await once(out, "finish");
  expect(statSync(file).size).toBeGreaterThan(HEAP_MB * 1024 * 1024);

  const env = childEnv(stack.config, { NODE_OPTIONS: `--max-old-space-size=${HEAP_MB}` });
  const started = Date.now();
  const result = await runCtl(env, ["import", "--project", String(stack.project.id), file]);
  expect(result.code, result.stderr).toBe(0);
  const summary = JSON.parse(result.stderr.trim().split("\n").pop() as string) as Record<string, number>;
  expect(summary).toMatchObject({ imported: LINES, rejected: 0, skipped: 0, profile_operations: LINES });
  console.log(`ctl import: ${LINES} lines in ${Date.now() - started} ms under a ${HEAP_MB} MB heap`);

  const connection = producerConnection(stack.config);
  const shards = profileOperationsQueues(connection, stack.config.queuePrefix, stack.config.intakeQueueShards);
  try {
    // An import's jobs wait behind live traffic, in the prioritized set (docs/bulk.md), in their users' shards.
    const jobs = (await Promise.all(shards.map((queue) => queue.getJobs(["waiting", "prioritized"], 0, -1)))).flat();
    expect(jobs.reduce((sum, job) => sum + job.data.events.length, 0)).toBe(LINES);
  } finally {
    await Promise.all(shards.map((queue) => queue.close()));
    connection.disconnect();
  }
}, 300_000);
