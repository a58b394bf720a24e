import type { Config } from "@cm/config";
import { connect, migrate, type Sql } from "@cm/db";
import { startGateway, type RunningGateway } from "@cm/gateway";
import type { ProfileOperation } from "@cm/domain";
import {
  addProfileOperationsBatch,
  IMPORT_JOB_PRIORITY,
  maintenanceQueue,
  producerConnection,
  type RedisSettings,
  profileOperationsQueues,
} from "@cm/queue";
import { startWorker, type RunningWorker } from "@cm/worker";
import type { Job, Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { segmentLineOperations } from "../../apps/ctl/src/import-records";
import { waitUntilApplied } from "../support/applied";
import { testConfig } from "../support/env";
import { testLogger } from "../support/logs";
import { startPrivatePostgres, type PrivatePostgres } from "../support/private-postgres";
import { createTestProject, type TestProject } from "../support/project";
import { createTestQueuePrefix } from "../support/queue";
import { waitFor } from "../support/wait";

// Postgres down for longer than any count of tries would allow (jobs used to get 50, about 43
// minutes of backoff): the clock of the backoff is made short (5 ms doubling up to 50 ms), so
// that a job is tried well past 50 times in seconds. Nothing acknowledged is lost, no job fails,
// and the worker's metrics and readiness say that jobs wait on the outage. A job of `ctl import`
// (queued with IMPORT_JOB_PRIORITY, taken only when no live job waits) is tried as long, keeps
// its priority, and is applied too.

let postgres: PrivatePostgres;
let sql: Sql;
let project: TestProject;
let gateway: RunningGateway;
let worker: RunningWorker;
const queue = createTestQueuePrefix("postgres_outage");
let redis: RedisSettings & Pick<Config, "intakeQueueShards">;

beforeAll(async () => {
  postgres = await startPrivatePostgres();
  sql = connect(postgres.url, { max: 2 });
  await migrate(sql);
  project = await createTestProject(sql);
  const settings = testConfig(postgres.url, queue.prefix, { jobRetryBaseDelayMs: 5, jobRetryMaxDelayMs: 50 });
  redis = settings;
  gateway = await startGateway(settings, testLogger("postgres_outage"));
  worker = await startWorker(settings, testLogger("postgres_outage"));
});
afterAll(async () => {
  await Promise.all([gateway.stop(), worker.stop()]);
  await sql.end({ timeout: 1 });
  postgres.stop();
  await queue.cleanup();
});

async function identify(id: string): Promise<number> {
  const response = await fetch(`${gateway.url}/api/v2/users/track?auth_token=${project.authToken}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ id, data: { during: "outage" } }),
  });
  return response.status;
}

/** The worker's count of tries of `queues` put back because Postgres was out of reach. */
async function outageRetries(queues: Queue[]): Promise<number> {
  const text = await (await fetch(`${worker.healthUrl}/metrics`)).text();
  const counts = queues.map((shard) => {
    const line = text.split("\n").find((l) => l.startsWith(`job_retries_total{queue="${shard.name}",cause="outage"}`));
    return line === undefined ? 0 : Number(line.split(" ")[1]);
  });
  return counts.reduce((sum, count) => sum + count, 0);
}

/**
 * Waits until the retention job every worker runs at its start is done. A retention that the
 * crash interrupts waits on retry as the identify jobs do, and is counted with them: on a loaded
 * machine it was still running when the test crashed Postgres, and 21 jobs waited for 20 sent.
 */
async function retentionAtStartDone(): Promise<void> {
  const connection = producerConnection(redis);
  const schedule = maintenanceQueue(connection, queue.prefix);
  try {
    await waitFor("the retention of the worker's start", async () => {
      const counts = await schedule.getJobCounts("waiting", "prioritized", "active");
      return Object.values(counts).every((count) => count === 0) ? true : undefined;
    });
  } finally {
    await schedule.close();
    connection.disconnect();
  }
}

/** Profile operations as `ctl import` queues them (Segment identifies, stamped by their line). */
function importedOperations(ids: string[]): ProfileOperation[] {
  const context = { projectId: project.id, topicIds: new Map(), now: Date.now(), startedAt: Date.now(), sourceKey: "" };
  return ids.flatMap((userId, index) => {
    const converted = segmentLineOperations({ type: "identify", userId }, { ordinal: index + 1 }, context);
    if (!converted.ok) throw new Error(converted.reason);
    return converted.operations.flatMap((queued) => (queued.queue === "profile-operations" ? [queued.operation] : []));
  });
}

describe("Postgres down for longer than any retry budget", () => {
  it("tries the jobs until Postgres is back, and loses nothing", { timeout: 90_000 }, async () => {
    // The token is checked (and its verdict cached) while Postgres is up.
    expect(await identify("before")).toBe(200);
    await waitUntilApplied(sql, project.id, ["before"], 10_000);
    await retentionAtStartDone();

    postgres.crash();
    const connection = producerConnection(redis);
    // Every shard: the identifies are in their users'; the import's job is written to the first.
    const shards = profileOperationsQueues(connection, queue.prefix, redis.intakeQueueShards);
    const jobs = shards[0]!;
    const failedCount = async () =>
      (await Promise.all(shards.map((shard) => shard.getFailedCount()))).reduce((sum, count) => sum + count, 0);
    try {
      const imported = await addProfileOperationsBatch(jobs, importedOperations(["imported-during"]), {
        priority: IMPORT_JOB_PRIORITY,
      });
      const importedJob = async () => (await jobs.getJob(imported.id as string)) as Job;
      await waitFor("the import's job tried more than 50 times", async () =>
        (await importedJob()).attemptsStarted > 50 ? true : undefined,
      );
      expect((await importedJob()).opts.priority).toBe(IMPORT_JOB_PRIORITY);

      const acknowledged: string[] = [];
      for (let n = 0; n < 20; n += 1) if ((await identify(`during-${n}`)) === 200) acknowledged.push(`during-${n}`);
      expect(acknowledged).toHaveLength(20);
      const tried = async () =>
        Math.max(
          0,
          ...(await Promise.all(shards.map((shard) => shard.getJobs(["delayed", "waiting", "active"]))))
            .flat()
            .filter((job) => job.id !== imported.id)
            .map((job) => job.attemptsStarted),
        );
      await waitFor("a job tried more than 50 times", async () => ((await tried()) > 50 ? true : undefined), 30_000);
      expect(await outageRetries(shards)).toBeGreaterThan(50);
      expect(await failedCount()).toBe(0);
      const ready = await fetch(`${worker.healthUrl}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({
        postgres: "unreachable",
        jobs_waiting_on_retry: { outage: acknowledged.length + 1 },
      });

      postgres.start();
      await waitUntilApplied(sql, project.id, [...acknowledged, "imported-during"], 30_000);
      expect(await failedCount()).toBe(0);
      const [{ letters }] = await sql<
        { letters: number }[]
      >`SELECT count(*)::integer AS letters FROM identify_dead_letters`;
      expect(letters).toBe(0);
      await waitFor("readiness to show no job waiting", async () => {
        const body = await (await fetch(`${worker.healthUrl}/readyz`)).json();
        return body.status === "ready" && body.jobs_waiting_on_retry.outage === 0 ? true : undefined;
      });
    } finally {
      await Promise.all(shards.map((shard) => shard.close()));
      connection.disconnect();
    }
  });
});
