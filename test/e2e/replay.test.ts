import { createProject, recordDeadLetter } from "@cm/db";
import type { IdentifyEvent } from "@cm/domain";
import {
  consumerConnection,
  PROFILE_OPERATIONS_JOB,
  profileOperationsJobData,
  profileOperationsQueue,
  PROFILE_OPERATIONS_V1,
  producerConnection,
} from "@cm/queue";
import { Worker } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childEnv } from "../support/env";
import { runCtl } from "../support/processes";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";

// docs/reliability.md "Replay": what a worker could not apply (dead letters) or a job that
// failed for good (the failed set) waits for an operator; `ctl replay` puts it back on its queue
// once the cause is fixed, and `ctl discard` deletes it. Nothing is removed by age.

let stack: TestStack;
let base: string;

beforeAll(async () => {
  stack = await createTestStack("replay");
  base = (await stack.gateway()).url;
});
afterAll(() => stack.close());

async function ctl(args: string[]) {
  const result = await runCtl(childEnv(stack.config), args);
  expect(result.stderr, args.join(" ")).toBe("");
  expect(result.code, args.join(" ")).toBe(0);
  return JSON.parse(result.stdout);
}

async function send(path: string, body: unknown) {
  const response = await fetch(`${base}/api/v2/users/${path}?auth_token=${stack.project.authToken}`, {
    method: "POST",
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
}

async function read(id: string) {
  const response = await fetch(`${base}/api/v2/users/${id}`, { headers: { authorization: stack.project.apiKey } });
  return response.status === 200 ? ((await response.json()) as { data: Record<string, unknown> }) : null;
}

const identify = (projectId: number, id: string, t: number, data: IdentifyEvent["data"]): IdentifyEvent => ({
  projectId,
  key: `i:${id}`,
  id,
  t,
  updateOnly: false,
  data,
});

describe("failed jobs", () => {
  it("are kept until replayed or discarded, by project", async () => {
    const other = await createProject(stack.db.sql, "other");
    const connection = producerConnection(stack.config);
    const queue = profileOperationsQueue(connection, stack.config.queuePrefix);
    const workerConnection = consumerConnection(stack.config);
    // A job that failed for good, as one that stalled past its limit does: no worker of ours runs yet.
    const failing = new Worker(
      queue.name,
      async () => {
        throw new Error("stalled more than allowable limit");
      },
      { connection: workerConnection, prefix: stack.config.queuePrefix },
    );
    try {
      const now = Date.now();
      await queue.add(
        PROFILE_OPERATIONS_JOB,
        {
          ...PROFILE_OPERATIONS_V1,
          events: [
            identify(stack.project.id, "failed-kept", now, { plan: "pro" }),
            identify(other.id, "failed-dropped", now, { plan: "pro" }),
          ],
        },
        { attempts: 1 },
      );
      // As the next release's gateways queue them (payload version 2).
      await queue.add(
        PROFILE_OPERATIONS_JOB,
        profileOperationsJobData(
          [
            identify(stack.project.id, "failed-kept-v2", now, { plan: "pro" }),
            identify(other.id, "failed-dropped-v2", now, { plan: "pro" }),
          ],
          2,
        ),
        { attempts: 1 },
      );
      await waitFor("the jobs to fail", async () => ((await queue.getFailedCount()) === 2 ? true : undefined));
      await failing.close();

      expect(await ctl(["discard", "--project", String(other.id)])).toEqual({
        deadLetters: 0,
        failedJobItems: 2,
        unreadable: 0,
      });
      expect(await ctl(["replay"])).toEqual({ deadLetters: 0, failedJobItems: 2, unreadable: 0 });
      expect(await queue.getFailedCount()).toBe(0);
      await stack.worker();
      for (const id of ["failed-kept", "failed-kept-v2"]) {
        await waitFor("the replayed identify", () => read(id));
        expect(await read(id)).toMatchObject({ data: { plan: "pro" } });
      }
    } finally {
      await failing.close();
      await queue.close();
      connection.disconnect();
      workerConnection.disconnect();
    }
  });
});

describe("dead letters", () => {
  it("are replayed once the cause is fixed, with their own stamps: newer data stays, erased users stay erased", async () => {
    // A schema mistake refuses valid data: the identify is dead-lettered (23514), the next applied.
    await stack.db.sql`ALTER TABLE profiles ADD CONSTRAINT no_city CHECK (NOT data ? 'city')`;
    await send("track", { id: "replayed", data: { plan: "old", city: "Oslo" } });
    await waitFor("the dead letter", async () =>
      (await stack.db.sql`SELECT 1 FROM identify_dead_letters WHERE error_kind = '23514'`).length === 1
        ? true
        : undefined,
    );
    await send("track", { id: "replayed", data: { plan: "new" } });
    await waitFor("the newer identify", async () => ((await read("replayed"))?.data.plan === "new" ? true : undefined));

    // An operation of a user deleted since, stamped before the delete: kept as a dead letter
    // twice (its job applied twice), it is one letter.
    await send("track", { id: "erased", data: { plan: "pro" } });
    await waitFor("the profile", () => read("erased"));
    const beforeDelete = Date.now();
    await send("delete", { id: "erased" });
    await waitFor("the erasure", async () => ((await read("erased")) === null ? true : undefined));
    for (let n = 0; n < 2; n += 1) {
      await recordDeadLetter(stack.db.sql, {
        projectId: stack.project.id,
        jobId: "by hand",
        queue: "identify",
        event: identify(stack.project.id, "erased", beforeDelete - 1_000, { plan: "back from the dead" }),
        error: new Error("refused"),
      });
    }

    await stack.db.sql`ALTER TABLE profiles DROP CONSTRAINT no_city`;
    expect(await ctl(["replay", "--error-kind", "23514"])).toEqual({
      deadLetters: 1,
      failedJobItems: 0,
      unreadable: 0,
    });
    expect(await ctl(["replay", "--project", String(stack.project.id), "--queue", "identify"])).toEqual({
      deadLetters: 1,
      failedJobItems: 0,
      unreadable: 0,
    });
    await waitFor("the replayed identify", async () =>
      (await read("replayed"))?.data.city === "Oslo" ? true : undefined,
    );
    expect((await read("replayed"))?.data).toEqual({ plan: "new", city: "Oslo" });
    expect(await read("erased")).toBeNull();
    expect(await stack.db.sql`SELECT 1 FROM identify_dead_letters`).toHaveLength(0);
  });

  it("are discarded by filter, and the rest kept", async () => {
    const letter = (id: string) =>
      recordDeadLetter(stack.db.sql, {
        projectId: stack.project.id,
        jobId: "by hand",
        queue: "identify",
        event: identify(stack.project.id, id, Date.now(), { a: 1 }),
        error: new Error("refused"),
      });
    await letter("discarded");
    await stack.db.sql`UPDATE identify_dead_letters SET created_at = now() - interval '40 days'`;
    await letter("kept");
    const tenDaysAgo = new Date(Date.now() - 10 * 86_400_000).toISOString();
    expect(await ctl(["discard", "--to", tenDaysAgo])).toEqual({ deadLetters: 1, failedJobItems: 0, unreadable: 0 });
    const left = await stack.db.sql<{ event: string }[]>`SELECT event FROM identify_dead_letters`;
    expect(left.map((row) => JSON.parse(row.event).id)).toEqual(["kept"]);
    const refused = await runCtl(childEnv(stack.config), ["replay", "--queue", "fanout"]);
    expect([refused.code, refused.stderr]).toEqual([2, expect.stringMatching(/--queue/)]);
  });
});
