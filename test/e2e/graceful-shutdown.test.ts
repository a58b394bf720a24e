import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { profileKeyForId, type IdentifyEvent } from "@cm/domain";
import { PROFILE_OPERATIONS_JOB, profileOperationsQueue } from "@cm/queue";
import { createTestStack, type TestStack } from "../support/services";
import { childEnv } from "../support/env";
import { startChild } from "../support/processes";
import { waitFor } from "../support/wait";
import { layoutTimeout } from "../support/database";
import { testRedis } from "../support/redis";

let stack: TestStack;
beforeAll(async () => {
  stack = await createTestStack("shutdown");
});
afterAll(() => stack.close());

async function storedIds(): Promise<Set<string>> {
  const rows = await stack.db.sql<{ external_id: string }[]>`
    SELECT external_id FROM profiles WHERE project_id = ${stack.project.id} AND created_t IS NOT NULL`;
  return new Set(rows.map((row) => row.external_id));
}

// What the workers apply takes the layout's time: on Citus every batch is a distributed statement,
// whose shards run the change feed's capture (docs/scaling.md, "The change feed on Citus").
describe("SIGTERM under load", { timeout: layoutTimeout(30_000) }, () => {
  it("the gateway turns not ready, answers what it accepted, and every 200 is applied", async () => {
    const env = childEnv({ ...stack.config, port: 0 }, { SHUTDOWN_DELAY_MS: "400" });
    const gateway = startChild("apps/gateway/dist/main.js", { ...env, LOG_LEVEL: "info" });
    const url = await waitFor("the gateway to listen", async () => /"url":"(http:[^"]+)"/.exec(gateway.output())?.[1]);
    const worker = startChild("apps/worker/dist/main.js", childEnv(stack.config));

    const accepted: string[] = [];
    let refused = 0;
    let sent = 0;
    let stopped = false;
    const client = async (lane: number) => {
      while (!stopped) {
        const id = `load-${lane}-${(sent += 1)}`;
        try {
          const response = await fetch(`${url}/api/v2/users/track?auth_token=${stack.project.authToken}`, {
            method: "POST",
            body: JSON.stringify({ id, data: { lane } }),
          });
          if (response.status === 200) accepted.push(id);
          else expect(response.status).toBe(500);
        } catch {
          refused += 1;
          if (refused > 50) stopped = true;
        }
      }
    };
    const lanes = Array.from({ length: 20 }, (_, lane) => client(lane));
    await waitFor("some load", async () => (accepted.length > 200 ? true : undefined));

    gateway.child.kill("SIGTERM");
    const readiness = await waitFor(
      "readiness to flip",
      async () => {
        const response = await fetch(`${url}/readyz`).catch(() => null);
        return response?.status === 503 ? response.status : undefined;
      },
      2_000,
    );
    expect(readiness).toBe(503);
    const acceptedBeforeClose = accepted.length;
    expect(await gateway.exited).toBe(0);
    stopped = true;
    await Promise.all(lanes);
    expect(accepted.length).toBeGreaterThan(acceptedBeforeClose);

    await waitFor(
      "every accepted identify to be applied",
      async () => {
        const stored = await storedIds();
        return accepted.every((id) => stored.has(id)) ? true : undefined;
      },
      layoutTimeout(30_000),
    );
    worker.child.kill("SIGTERM");
    expect(await worker.exited).toBe(0);
  });

  it(
    "the worker finishes or hands back its jobs and exits; a new worker applies the rest",
    async () => {
      const redis = testRedis({ maxRetriesPerRequest: null });
      const queue = profileOperationsQueue(redis, stack.config.queuePrefix);
      try {
        const event = (n: number): IdentifyEvent => ({
          projectId: stack.project.id,
          key: profileKeyForId(`w-${n}`),
          id: `w-${n}`,
          t: Date.now(),
          updateOnly: false,
          data: { n },
        });
        const jobs = Array.from({ length: 80 }, (_, j) => ({
          name: PROFILE_OPERATIONS_JOB,
          data: { events: Array.from({ length: 250 }, (_, i) => event(j * 250 + i)) },
        }));
        const env = childEnv(stack.config, { WORKER_CONCURRENCY: "2" });
        await queue.pause();
        await queue.addBulk(jobs);
        const worker = startChild("apps/worker/dist/main.js", env);
        await waitFor("the worker to start", async () => (/worker started/.test(worker.output()) ? true : undefined));
        await queue.resume();
        await waitFor("jobs in hand", async () => ((await queue.getActiveCount()) > 0 ? true : undefined));
        worker.child.kill("SIGTERM");
        expect(await worker.exited).toBe(0);
        expect(worker.output()).toMatch(/worker stopped/);
        expect(await queue.getActiveCount()).toBe(0);
        expect(await queue.getWaitingCount()).toBeGreaterThan(0);

        const second = startChild("apps/worker/dist/main.js", env);
        await waitFor(
          "the queue to drain",
          async () => ((await queue.getJobCountByTypes("waiting", "active", "delayed")) === 0 ? true : undefined),
          layoutTimeout(60_000),
        );
        second.child.kill("SIGTERM");
        expect(await second.exited).toBe(0);
        expect(await queue.getFailedCount()).toBe(0);
        const stored = await storedIds();
        for (let n = 0; n < 80 * 250; n += 1) if (!stored.has(`w-${n}`)) throw new Error(`w-${n} was lost`);
      } finally {
        await queue.close();
        redis.disconnect();
      }
    },
    layoutTimeout(30_000),
  );
});
