import { intakeLogKey } from "@cm/queue";
import type { IntakeLogPage } from "@cm/domain";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPrivateCluster, type PrivateCluster } from "../support/private-cluster";
import { createTestProject, type TestProject } from "../support/project";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";

// docs/intake-log.md on a Redis Cluster of three primaries (private redis-servers on loopback
// ports): each project's log is one key, hash-tagged like the queues' names, so that its writes
// (pipelined per project), reads and erasure each stay within one slot, whichever node serves it.

let cluster: PrivateCluster;
let stack: TestStack;
let base: string;

beforeAll(async () => {
  cluster = await startPrivateCluster();
  stack = await createTestStack("intake_log_cluster", {
    redisUrl: `redis://127.0.0.1:${cluster.nodes[0]!.port}`,
    redisCluster: { nodes: cluster.addresses },
    intakeQueueShards: 3,
  });
  base = (await stack.gateway()).url;
  await stack.worker();
}, 120_000);
afterAll(async () => {
  await stack?.close();
  await cluster?.stop();
});

async function send(project: TestProject, path: string, body: unknown) {
  const response = await fetch(`${base}/api/v2${path}?auth_token=${project.authToken}`, {
    method: "POST",
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
}

async function entries(project: TestProject) {
  const response = await fetch(`${base}/api/v2/intake-log`, { headers: { authorization: project.apiKey } });
  expect(response.status).toBe(200);
  return ((await response.json()) as IntakeLogPage).entries.map(({ operation, user_id }) => `${operation} ${user_id}`);
}

describe("the intake log on a Redis Cluster", () => {
  it("keeps, serves and erases each project's log in the slot of its hash tag", { timeout: 60_000 }, async () => {
    const projects = [stack.project, await createTestProject(stack.db.sql, "second")];
    expect(intakeLogKey("cm", 7)).toBe("cm:{intake-log:7}");
    for (const project of projects) {
      await send(project, "/users/track", { id: `kept-${project.id}` });
      await send(project, "/users/track", { id: `gone-${project.id}`, data: { secret: "s" } });
    }
    for (const project of projects) {
      expect(await waitFor("the entries", async () => ((await entries(project)).length === 2 ? true : undefined))).toBe(
        true,
      );
      await send(project, "/users/delete", { id: `gone-${project.id}` });
    }
    for (const project of projects) {
      const left = await waitFor("the erasure", async () => {
        const listed = await entries(project);
        return listed.includes(`identify gone-${project.id}`) ? undefined : listed;
      });
      expect(left).toEqual([`identify kept-${project.id}`, "delete null"]);
    }
  });
});
