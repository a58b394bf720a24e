import type { Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { profileKeyForId, type IdentifyEvent } from "@cm/domain";
import {
  PROFILE_OPERATIONS_JOB,
  profileOperationsQueue,
  type ProfileOperationsJobData,
  type RedisConnection,
} from "@cm/queue";
import { createTestDatabase, type TestDatabase, layoutTimeout } from "../support/database";
import { childEnv, testConfig } from "../support/env";
import { startChild } from "../support/processes";
import { createTestProject, type TestProject } from "../support/project";
import { createTestQueuePrefix } from "../support/queue";
import { waitFor } from "../support/wait";
import { testRedis } from "../support/redis";

const JOBS = 60;
const EVENTS_PER_JOB = 500;

let db: TestDatabase;
let project: TestProject;
let redis: RedisConnection;
let queue: Queue<ProfileOperationsJobData>;
const prefix = createTestQueuePrefix("crash");

function event(n: number): IdentifyEvent {
  const id = `user-${n % 5_000}`;
  return {
    projectId: project.id,
    key: profileKeyForId(id),
    id,
    t: 1_700_000_000_000 + n,
    updateOnly: false,
    data: { [`field${n % 7}`]: n },
  };
}

/** The state the events converge to, computed without the worker: each field keeps its latest write. */
function expectedData(): Map<string, Record<string, number>> {
  const profiles = new Map<string, Record<string, number>>();
  for (let n = 0; n < JOBS * EVENTS_PER_JOB; n += 1) {
    const id = `user-${n % 5_000}`;
    profiles.set(id, { ...profiles.get(id), [`field${n % 7}`]: n });
  }
  return profiles;
}

beforeAll(async () => {
  db = await createTestDatabase("crash");
  project = await createTestProject(db.sql);
  redis = testRedis({ maxRetriesPerRequest: null });
  queue = profileOperationsQueue(redis, prefix.prefix);
});

afterAll(async () => {
  await queue.close();
  redis.disconnect();
  await prefix.cleanup();
  await db.drop();
});

describe("a worker killed mid-batch", () => {
  it(
    "loses nothing: another worker takes the batch over and the outcome is as if applied once",
    async () => {
      await queue.addBulk(
        Array.from({ length: JOBS }, (_, j) => ({
          name: PROFILE_OPERATIONS_JOB,
          data: { events: Array.from({ length: EVENTS_PER_JOB }, (_, i) => event(j * EVENTS_PER_JOB + i)) },
        })),
      );
      const env = childEnv(testConfig(db.url, prefix.prefix), { WORKER_LOCK_MS: "1500", WORKER_CONCURRENCY: "2" });

      const first = startChild("apps/worker/dist/main.js", env);
      await waitFor(
        "the first worker to be mid-way",
        async () => {
          const done = JOBS - (await queue.getJobCountByTypes("waiting", "active", "delayed"));
          return done >= 3 && (await queue.getActiveCount()) > 0 ? true : undefined;
        },
        30_000,
      );
      first.child.kill("SIGKILL");
      await first.exited;
      expect(await queue.getActiveCount()).toBeGreaterThan(0);

      const second = startChild("apps/worker/dist/main.js", env);
      try {
        await waitFor(
          "the queue to drain",
          async () => ((await queue.getJobCountByTypes("waiting", "active", "delayed")) === 0 ? true : undefined),
          layoutTimeout(60_000),
        );
      } finally {
        second.child.kill("SIGTERM");
        expect(await second.exited).toBe(0);
      }

      expect(await queue.getFailedCount()).toBe(0);
      const rows = await db.sql<{ external_id: string; data: Record<string, { v: number }> }[]>`
      SELECT external_id, data FROM profiles WHERE project_id = ${project.id}`;
      const stored = new Map(
        rows.map((row) => [row.external_id, Object.fromEntries(Object.entries(row.data).map(([k, e]) => [k, e.v]))]),
      );
      expect(stored).toEqual(expectedData());
    },
    layoutTimeout(30_000),
  );
});
