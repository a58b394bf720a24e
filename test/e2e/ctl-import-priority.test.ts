import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  completedJobSummary,
  eventsQueues,
  intakeShard,
  producerConnection,
  profileOperationsQueues,
  type RedisConnection,
} from "@cm/queue";
import type { Job, Queue } from "bullmq";
import { afterAll, beforeAll, expect, it } from "vitest";
import { childEnv } from "../support/env";
import { runCtl } from "../support/processes";
import { createTestProject } from "../support/project";
import { drained } from "../support/queue";
import { createTestStack, type TestStack } from "../support/services";

// An import's backlog yields to live traffic (docs/bulk.md "Import"): another project's identify
// and event, sent through the gateway after a whole import was queued, are applied before any of
// the import's jobs by a worker that takes one job of a queue at a time; the import is all
// applied after them.

/** Users of the import, each with a Segment identify and a track: several jobs in each queue. */
const USERS = 600;

let stack: TestStack;
let dir: string;
let connection: RedisConnection;
/** Every shard of each intake queue. */
let queues: { identify: Queue[]; events: Queue[] };

beforeAll(async () => {
  stack = await createTestStack("ctl_import_priority", { workerConcurrency: 1 });
  dir = mkdtempSync(join(tmpdir(), "ctl-import-priority-"));
  connection = producerConnection(stack.config);
  queues = {
    identify: profileOperationsQueues(connection, stack.config.queuePrefix, stack.config.intakeQueueShards),
    events: eventsQueues(connection, stack.config.queuePrefix, stack.config.intakeQueueShards),
  };
});
afterAll(async () => {
  await Promise.all([...queues.identify, ...queues.events].map((queue) => queue.close()));
  connection.disconnect();
  rmSync(dir, { recursive: true, force: true });
  await stack.close();
});

/** The projects a completed batch job held (the worker keeps their ids, not the items). */
const projectsOf = (job: Job) => (job.data as ReturnType<typeof completedJobSummary>).completed.projects;

it("applies another project's live identify and event before a whole import queued ahead of them", async () => {
  const importing = stack.project;
  const live = await createTestProject(stack.db.sql, "Live");
  const file = join(dir, "segment.ndjson");
  const lines = [];
  for (let n = 0; n < USERS; n += 1) {
    lines.push({ type: "identify", userId: `imp-${n}`, traits: { email: `imp-${n}@example.com`, n } });
    lines.push({ type: "track", userId: `imp-${n}`, event: "Imported", messageId: `imp-msg-${n}`, properties: { n } });
  }
  writeFileSync(file, lines.map((line) => JSON.stringify(line)).join("\n") + "\n");
  const env = childEnv(stack.config);
  const imported = await runCtl(env, ["import", "--project", String(importing.id), "--format", "segment", file]);
  expect(imported.code, imported.stderr).toBe(0);
  const counted = async (shards: Queue[]) =>
    (await Promise.all(shards.map((queue) => queue.count()))).reduce((sum, count) => sum + count, 0);
  const queuedByImport = { identify: await counted(queues.identify), events: await counted(queues.events) };
  expect(queuedByImport.identify).toBeGreaterThan(1);
  expect(queuedByImport.events).toBeGreaterThan(1);

  const gateway = await stack.gateway();
  const send = async (path: string, body: object) => {
    const response = await fetch(`${gateway.url}/api/v2${path}?auth_token=${live.authToken}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(200);
  };
  await send("/users/track", { id: "live-1", data: { live: true } });
  await send("/events/track", { identity: { id: "live-1" }, event_name: "Live" });

  await stack.worker();
  await drained([...queues.identify, ...queues.events], 120_000);

  // The live user's operations and events are in the shard of their user, with their share of the import's.
  const liveShard = intakeShard(live.id, "live-1", stack.config.intakeQueueShards);
  for (const queue of [queues.identify[liveShard]!, queues.events[liveShard]!]) {
    const done = await queue.getJobs(["completed"]);
    const liveJobs = done.filter((job) => projectsOf(job).includes(live.id));
    const importJobs = done.filter((job) => projectsOf(job).includes(importing.id));
    expect(liveJobs, queue.name).toHaveLength(1);
    expect(importJobs.length, queue.name).toBeGreaterThan(1);
    expect(await queue.getFailedCount()).toBe(0);
    // One job at a time: the live job was done when the first of the import's was taken.
    const liveDone = liveJobs[0]?.finishedOn as number;
    const importTaken = Math.min(...importJobs.map((job) => job.processedOn as number));
    expect(liveDone, `${queue.name}: the live job done before the import's first was taken`).toBeLessThanOrEqual(
      importTaken,
    );
  }

  const exported = await runCtl(env, ["export", "--project", String(importing.id), "--events"]);
  expect(exported.code, exported.stderr).toBe(0);
  const types = exported.stdout
    .trim()
    .split("\n")
    .map((text) => (JSON.parse(text) as { type: string }).type);
  expect(types.filter((type) => type === "profile")).toHaveLength(USERS);
  expect(types.filter((type) => type === "event")).toHaveLength(USERS);
});
