import { type Queue, Worker } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recordDeadLetter } from "@cm/db";
import {
  PROFILE_OPERATIONS_JOB,
  maintenanceQueue,
  profileOperationsQueue,
  RETENTION_JOB,
  type RedisConnection,
} from "@cm/queue";
import { applyRetention } from "@cm/app";
import { testRedis } from "../support/redis";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";

const KEEP_ALL = {
  failedJobWarnDays: 14,
  deadLetterWarnDays: 30,
  hiddenProfileRetentionDays: 30,
  eventRetentionDays: 90,
  changeRetentionDays: 7,
};

let stack: TestStack;
let redis: RedisConnection;
let queue: Queue;

beforeAll(async () => {
  stack = await createTestStack("retention", { maintenanceEveryMs: 1_000, hiddenProfileRetentionDays: 7 });
  redis = testRedis({ maxRetriesPerRequest: null });
  queue = profileOperationsQueue(redis, stack.config.queuePrefix);
});
afterAll(async () => {
  await queue.close();
  redis.disconnect();
  await stack.close();
});

async function ageDeadLetters(days: number) {
  await stack.db.sql`UPDATE identify_dead_letters SET created_at = now() - make_interval(days => ${days})`;
}

describe("retention", () => {
  it("keeps failed jobs, and counts those older than FAILED_JOB_WARN_DAYS for the warning", async () => {
    const connection = redis.duplicate();
    const failing = new Worker(
      queue.name,
      async () => {
        throw new Error("refused");
      },
      { connection, prefix: stack.config.queuePrefix },
    );
    await queue.add(PROFILE_OPERATIONS_JOB, { events: [] }, { attempts: 1 });
    await waitFor("the job to fail", async () => ((await queue.getFailedCount()) === 1 ? true : undefined));
    await failing.close();
    connection.disconnect();
    expect((await applyRetention(stack.db.sql, [queue], KEEP_ALL)).agedFailedJobs).toBe(0);
    const later = Date.now() + 15 * 86_400_000;
    expect((await applyRetention(stack.db.sql, [queue], KEEP_ALL, later)).agedFailedJobs).toBe(1);
    // It holds acknowledged operations: only a replay or a discard removes it.
    expect(await queue.getFailedCount()).toBe(1);
  });

  it("keeps dead letters, and counts those older than DEAD_LETTER_WARN_DAYS for the warning", async () => {
    await recordDeadLetter(stack.db.sql, {
      queue: "identify",
      projectId: stack.project.id,
      jobId: "old",
      event: { id: "old" },
      error: "x",
    });
    await ageDeadLetters(40);
    await recordDeadLetter(stack.db.sql, {
      queue: "identify",
      projectId: stack.project.id,
      jobId: "new",
      event: { id: "new" },
      error: "x",
    });
    expect((await applyRetention(stack.db.sql, [], KEEP_ALL)).agedDeadLetters).toBe(1);
    expect((await stack.db.sql`SELECT job_id FROM identify_dead_letters ORDER BY id`).map((r) => r.job_id)).toEqual([
      "old",
      "new",
    ]);
  });

  it("walks every profile and removes only rows that never became profiles and are past the retention, never a tombstone or a linked id", async () => {
    const { id: project } = stack.project;
    // More rows than one chunk of the walk, so that the walk has to carry on where it stopped.
    await stack.db.sql`
      INSERT INTO profiles (project_id, key, external_id, created_t, updated_at)
      SELECT ${project}, 'i:hidden-old-' || n, 'hidden-old-' || n, NULL, now() - interval '40 days' FROM generate_series(1, 12000) AS n`;
    // A tombstone is not a profile either, but removing it would let a late operation stamped
    // before the erasure bring the erased data back.
    await stack.db.sql`
      INSERT INTO profiles (project_id, key, external_id, created_t, deleted_t, updated_at) VALUES
        (${project}, 'i:hidden-recent', 'hidden-recent', NULL, NULL, now() - interval '1 day'),
        (${project}, 'i:profile-old', 'profile-old', 1, NULL, now() - interval '400 days'),
        (${project}, 'i:tombstone-old', 'tombstone-old', NULL, 5, now() - interval '400 days'),
        (${project}, 'i:erased-old', 'erased-old', 5, 5, now() - interval '400 days')`;
    // Nor the rows of a reidentify's two ids, which the read merges into one profile: on Citus the
    // link is stored beside the old id's row only.
    await stack.db.sql`
      INSERT INTO profile_links (project_id, from_key, to_key, t) VALUES (${project}, 'i:hidden-old-1', 'i:hidden-old-2', 1)`;
    expect((await applyRetention(stack.db.sql, [], KEEP_ALL)).hiddenProfiles).toBe(11_998);
    const left = await stack.db.sql`SELECT key FROM profiles WHERE project_id = ${project} ORDER BY key`;
    expect(left.map((r) => r.key)).toEqual([
      "i:erased-old",
      "i:hidden-old-1",
      "i:hidden-old-2",
      "i:hidden-recent",
      "i:profile-old",
      "i:tombstone-old",
    ]);
  });

  it("removes change feed changes applied before CHANGE_RETENTION_DAYS, and keeps the later ones", async () => {
    const { id: project } = stack.project;
    // At the feed's first position, which every reader can read (on Citus too: epoch 0 is closed).
    const change = (key: string, daysAgo: number) => stack.db.sql`
      INSERT INTO changes (project_id, pos_epoch, pos_t, pos_node, pos_xid, seq, user_key, type, user_id, applied_at, change)
      VALUES (${project}, 0, 0, 0, '1'::xid8, nextval('change_seq'), ${key}, 'profile.created', ${key},
              now() - make_interval(days => ${daysAgo}), '{}')`;
    await change("i:week-old", 8);
    await change("i:recent", 6);
    expect((await applyRetention(stack.db.sql, [], KEEP_ALL)).changes).toBe(1);
    const left = await stack.db.sql`
      SELECT user_key FROM changes WHERE project_id = ${project} AND user_key IN ('i:week-old', 'i:recent')`;
    expect(left.map((r) => r.user_key)).toEqual(["i:recent"]);
    expect(await stack.db.sql`SELECT 1 FROM change_trims WHERE project_id = ${project}`).toHaveLength(1);
  });

  it("runs by itself on the workers' schedule", async () => {
    const { id: project } = stack.project;
    await stack.db.sql`
      INSERT INTO profiles (project_id, key, external_id, created_t, updated_at)
      VALUES (${project}, 'h:scheduled', 'scheduled', NULL, now() - interval '10 days')`;
    await stack.worker();
    await waitFor("the scheduled retention", async () =>
      (await stack.db.sql`SELECT 1 FROM profiles WHERE key = 'h:scheduled'`).length === 0 ? true : undefined,
    );
  });

  it("leaves a retention job of a version the worker does not know alone", async () => {
    const schedule = maintenanceQueue(redis, stack.config.queuePrefix);
    try {
      const job = await schedule.add(RETENTION_JOB, { kind: "retention", v: 2 });
      await waitFor("the job left alone", async () => ((await job.getState()) === "delayed" ? true : undefined));
      await job.remove();
    } finally {
      await schedule.close();
    }
  });
});
