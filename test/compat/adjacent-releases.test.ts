import { createHash, randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { IdentifyEvent } from "@cm/domain";
import { startGateway, type RunningGateway } from "@cm/gateway";
import {
  addProfileOperationsBatch,
  EVENTS_JOB,
  eventsJobData,
  eventsQueue,
  PROFILE_OPERATIONS_JOB,
  maintenanceQueue,
  profileOperationsJobData,
  profileOperationsQueue,
  producerConnection,
  topicFanoutQueue,
} from "@cm/queue";
import type { Job, Queue } from "bullmq";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { childEnv, testConfig } from "../support/env";
import { testLogger } from "../support/logs";
import { builtRelease, previousRelease } from "../support/previous-release";
import { ROOT, startChild, type ChildService } from "../support/processes";
import { createTestProject, type TestProject } from "../support/project";
import { createTestQueuePrefix, drained } from "../support/queue";
import { fanoutOf, materialised } from "../support/topic-fanout";
import { waitFor } from "../support/wait";

// Gateways and workers of adjacent releases run side by side, in either order (docs/reliability.md,
// "Adjacent releases"): the previous release (test/compat/previous-release) is built from its
// commit, and its gateway queues for this tree's worker, then this tree's gateway for its worker,
// over one database migrated by this tree (the newer schema serves the older release: migrations
// only expand between adjacent releases). Every operation a gateway acknowledges is applied;
// nothing is left alone or failed, and only an operation Postgres refuses is dead-lettered. Runs
// the built services: build first (`npx turbo run build`); the previous release is built once,
// into .data/releases/<commit>.

const SUCCESS = { status: 200, message: "Success." };
const JSON_TYPE = { "content-type": "application/json" };
/** Between two requests, so that operations on one user never share a millisecond's stamp. */
const STAMP_GAP_MS = 3;

/** This tree; the previous release's is .data/releases/<commit>. */
const THIS_TREE = ".";
let previousTree: string;
let db: TestDatabase;
/** This release's reads, in process: what every pairing left behind is read the way clients will read it. */
let reader: RunningGateway;
const readerPrefix = createTestQueuePrefix("adjacent_reader");

beforeAll(async () => {
  previousTree = await builtRelease(previousRelease());
  db = await createTestDatabase("adjacent");
  reader = await startGateway(testConfig(db.url, readerPrefix.prefix), testLogger("adjacent_reader"));
}, 600_000);
afterAll(async () => {
  await reader?.stop();
  await readerPrefix.cleanup();
  await db?.drop();
});

/** One gateway and one worker, each of either release, on a queue prefix and a project of their own. */
interface Pairing {
  project: TestProject;
  prefix: string;
  url: string;
  gateway: ChildService;
  worker: ChildService;
  connection: Redis;
  queues: { identify: Queue; events: Queue; fanout: Queue; maintenance: Queue };
}

function pairing(label: string, trees: () => { gateway: string; worker: string }): Pairing {
  const state = {} as Pairing;
  const prefix = createTestQueuePrefix(`adjacent_${label}`);
  beforeAll(async () => {
    state.project = await createTestProject(db.sql, label);
    state.prefix = prefix.prefix;
    const config = testConfig(db.url, prefix.prefix);
    state.gateway = startChild(join(trees().gateway, "apps/gateway/dist/main.js"), childEnv(config));
    state.worker = startChild(join(trees().worker, "apps/worker/dist/main.js"), childEnv(config));
    state.url = await waitFor(
      `the ${label} gateway to listen`,
      async () => /"url":"(http:[^"]+)"/.exec(state.gateway.output())?.[1],
    );
    await waitFor(`the ${label} worker to start`, async () =>
      state.worker.output().includes("worker started") ? true : undefined,
    );
    state.connection = producerConnection(config);
    state.queues = {
      identify: profileOperationsQueue(state.connection, prefix.prefix),
      events: eventsQueue(state.connection, prefix.prefix),
      fanout: topicFanoutQueue(state.connection, prefix.prefix),
      maintenance: maintenanceQueue(state.connection, prefix.prefix),
    };
  });
  afterAll(async () => {
    for (const service of [state.gateway, state.worker]) {
      if (service?.child.exitCode === null && service.child.signalCode === null) service.child.kill("SIGTERM");
    }
    await Promise.all([state.gateway?.exited, state.worker?.exited]);
    await Promise.all(Object.values(state.queues ?? {}).map((queue) => queue.close()));
    state.connection?.disconnect();
    await prefix.cleanup();
  });
  return state;
}

/** A users-API request (identify and the six after it, events/track): each must be acknowledged. */
async function usersApi(pair: Pairing, path: string, body: unknown, method = "POST"): Promise<void> {
  const response = await fetch(`${pair.url}/api/v2/${path}?auth_token=${encodeURIComponent(pair.project.authToken)}`, {
    method,
    headers: JSON_TYPE,
    body: JSON.stringify(body),
  });
  expect({ path, status: response.status, body: await response.json() }).toEqual({ path, status: 200, body: SUCCESS });
  await sleep(STAMP_GAP_MS);
}

/** A request of the API with the project's key. */
async function api(base: string, project: TestProject, method: string, path: string, body?: unknown) {
  const response = await fetch(`${base}/api/v2${path}`, {
    method,
    headers: { authorization: project.apiKey, ...JSON_TYPE },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

async function deadLetters(projectId: number) {
  return db.sql<{ queue: string; error_kind: string; event: string }[]>`
    SELECT queue, error_kind, event FROM identify_dead_letters WHERE project_id = ${projectId} ORDER BY id`;
}

/**
 * Every operation a gateway queues a job for, through its API: identify, edit, tags,
 * unsubscribe, resubscribe, reidentify, delete, a tracked event, and a topic's default changed
 * (a fan-out); then what they left, read by this release.
 */
async function everyOperationApplied(pair: Pairing): Promise<void> {
  const { project } = pair;
  const created = await api(pair.url, project, "POST", "/topics", { name: "News", default_status: "subscribed" });
  expect(created.status).toBe(201);
  const topicId = created.body.id as number;

  await usersApi(pair, "users/track", { id: "u-a", data: { plan: "basic" } });
  await usersApi(pair, "users/track", {
    id: "u-b",
    data: { plan: "basic" },
    preferences: { topics: [{ id: topicId, status: "subscribed" }] },
  });
  await usersApi(pair, "users/track", { id: "u-c", data: {} });
  await usersApi(pair, "users/track", { id: "u-anon", data: { seen: true } });
  await usersApi(pair, "users/track", { id: "u-gone", data: { plan: "basic" } });
  await usersApi(pair, "users/edit", { id: "u-a", changes: { plan: "pro" } }, "PUT");
  await usersApi(pair, "users/tags/edit", { id: "u-a", add: ["vip"] }, "PUT");
  await usersApi(pair, "users/unsubscribe", { id: "u-b" });
  await usersApi(pair, "users/unsubscribe", { id: "u-c" });
  await usersApi(pair, "users/resubscribe", { id: "u-c" });
  await usersApi(pair, "users/reidentify", { id: "u-anon", new_id: "u-known" }, "PUT");
  await usersApi(pair, "users/delete", { id: "u-gone" });
  await usersApi(pair, "events/track", { identity: { id: "u-a" }, event_name: "Signed up", data: { plan: "pro" } });
  await drained([pair.queues.identify, pair.queues.events]);

  // Every profile is in place before the default changes: the fan-out must reach each one.
  const changed = await api(pair.url, project, "PATCH", `/topics/${topicId}`, { default_status: "unsubscribed" });
  expect(changed).toMatchObject({ status: 200, body: { default_status: "unsubscribed" } });
  await waitFor("the fan-out to finish", async () => ((await fanoutOf(db.sql, topicId))?.finished ? true : undefined));
  await drained([pair.queues.identify, pair.queues.events, pair.queues.fanout]);

  for (const queue of Object.values(pair.queues)) expect(await queue.getFailedCount(), queue.name).toBe(0);
  expect(await deadLetters(project.id)).toEqual([]);

  const read = async (id: string) => api(reader.url, project, "GET", `/users/${id}`);
  const topic = { id: topicId, name: "News" };
  expect(await read("u-a")).toMatchObject({
    status: 200,
    body: {
      id: "u-a",
      data: { plan: "pro" },
      tags: ["vip"],
      unsubscribed: false,
      topics: [{ ...topic, status: "unsubscribed", source: "default" }],
    },
  });
  expect(await read("u-b")).toMatchObject({
    status: 200,
    body: { id: "u-b", unsubscribed: true, topics: [{ ...topic, status: "unsubscribed", source: "global" }] },
  });
  expect(await read("u-c")).toMatchObject({
    status: 200,
    body: { id: "u-c", unsubscribed: false, topics: [{ ...topic, status: "unsubscribed", source: "default" }] },
  });
  expect(await read("u-known")).toMatchObject({ status: 200, body: { id: "u-known", data: { seen: true } } });
  expect((await read("u-gone")).status).toBe(404);
  expect(await api(reader.url, project, "GET", "/users/u-a/events")).toMatchObject({
    status: 200,
    body: { data: [{ event_name: "Signed up", data: { plan: "pro" } }] },
  });
  // The fan-out wrote the new default on every profile but u-b, whose explicit choice it kept.
  expect(await fanoutOf(db.sql, topicId)).toMatchObject({ generation: 1, finished: true });
  expect(await materialised(db.sql, project.id, topicId)).toMatchObject({ subscribed: 0, explicitWithDefault: 0 });
  const [choice] = await db.sql<{ status: string }[]>`
    SELECT p.topic_choices -> ${String(topicId)} ->> 'v' AS status
      FROM profiles AS p WHERE p.project_id = ${project.id} AND p.topic_choices ? ${String(topicId)}`;
  expect(choice).toEqual({ status: "subscribed" });
}

/** A profile operation as every gateway of both releases queues an identify. */
function identify(projectId: number, id: string, data: Record<string, unknown>): IdentifyEvent {
  return { projectId, key: `i:${id}`, id, t: Date.now(), updateOnly: false, data: data as IdentifyEvent["data"] };
}

/** A library of the previous release as it built it (libs/queue, libs/db), to act exactly as its services do. */
function previousLibrary<Library>(path: string): Library {
  return createRequire(import.meta.url)(join(ROOT, previousTree, path, "dist/index.js")) as Library;
}

/** Releases before issue 34 named the producers identifyQueue and addIdentifyBatch. */
interface ReleaseQueueLibrary {
  producerConnection(redisUrl: string): { disconnect(): void };
  profileOperationsQueue?(connection: unknown, prefix: string): { close(): Promise<void> };
  addProfileOperationsBatch?(queue: unknown, events: IdentifyEvent[]): Promise<{ id?: string }>;
  identifyQueue?(connection: unknown, prefix: string): { close(): Promise<void> };
  addIdentifyBatch?(queue: unknown, events: IdentifyEvent[]): Promise<{ id?: string }>;
}

/**
 * A job holding an operation Postgres refuses (U+0000 in jsonb: no gateway queues one, as if
 * validation were bypassed) beside a good one, queued as the pairing's gateway queues jobs: the
 * worker of the other release keeps the bad one as a dead letter and applies the good one.
 */
async function refusedInputDeadLettered(pair: Pairing, queuedBy: "previous" | "this"): Promise<void> {
  const { project } = pair;
  const operations = [
    identify(project.id, "u-beside-poison", { plan: "ok" }),
    identify(project.id, "u-poison", { note: "bad\u0000byte" }),
  ];
  let jobId: string | undefined;
  if (queuedBy === "this") jobId = (await addProfileOperationsBatch(pair.queues.identify, operations)).id;
  else {
    const release = previousLibrary<ReleaseQueueLibrary>("libs/queue");
    const connection = release.producerConnection(testConfig(db.url, pair.prefix).redisUrl);
    const queue = (release.profileOperationsQueue ?? release.identifyQueue)!(connection, pair.prefix);
    jobId = (await (release.addProfileOperationsBatch ?? release.addIdentifyBatch)!(queue, operations)).id;
    await queue.close();
    connection.disconnect();
  }
  // Completed, or gone once completed (the previous release's jobs may be removed on completion).
  await waitFor("the job to be applied", async () =>
    ["completed", "unknown"].includes(await pair.queues.identify.getJobState(jobId as string)) ? true : undefined,
  ).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}; the worker's last lines: ${pair.worker.output().slice(-3000)}`);
  });
  expect(await pair.queues.identify.getFailedCount()).toBe(0);
  const letters = await deadLetters(project.id);
  expect(letters.map((letter) => ({ ...letter, event: JSON.parse(letter.event).id }))).toEqual([
    { queue: "identify", error_kind: expect.any(String), event: "u-poison" },
  ]);
  expect(await api(reader.url, project, "GET", "/users/u-beside-poison")).toMatchObject({
    status: 200,
    body: { data: { plan: "ok" } },
  });
}

interface ReleaseDbLibrary {
  connect(databaseUrl: string, options: { max: number }): { end(): Promise<void> };
  recordDeadLetter(
    sql: unknown,
    letter: { projectId: number; jobId: string; event: unknown; error: string },
  ): Promise<void>;
}

describe("the previous release's dead letters, in this schema", () => {
  it("are kept once per operation, with the queue, error kind and operation id this release reads", async () => {
    const project = await createTestProject(db.sql, "previous_letters");
    const operation = identify(project.id, "u-letter", { note: "refused" });
    const trackedEvent = { projectId: project.id, eventId: "e-1", userId: "u-letter", name: "Refused" };
    const release = previousLibrary<ReleaseDbLibrary>("libs/db");
    const sql = release.connect(db.url, { max: 1 });
    try {
      // The same operation twice, as when its job is applied again after a worker died.
      for (const event of [operation, operation, trackedEvent]) {
        await release.recordDeadLetter(sql, { projectId: project.id, jobId: "1", event, error: "refused" });
      }
    } finally {
      await sql.end();
    }
    const hash = (value: unknown) => createHash("sha256").update(JSON.stringify(value)).digest("hex");
    expect(
      await db.sql`
        SELECT queue, error_kind, operation_id FROM identify_dead_letters WHERE project_id = ${project.id} ORDER BY id`,
    ).toEqual([
      { queue: "identify", error_kind: "unknown", operation_id: hash(operation) },
      { queue: "events", error_kind: "unknown", operation_id: hash(trackedEvent) },
    ]);
  });
});

describe("the previous release's gateway, this release's worker", () => {
  const pair = pairing("previous_gateway", () => ({ gateway: previousTree, worker: THIS_TREE }));

  it("applies every operation the gateway acknowledged: nothing lost, left alone, dead-lettered or failed", async () => {
    await everyOperationApplied(pair);
  }, 90_000);

  it("dead-letters an operation whose input is refused, in a job the previous release queued", async () => {
    await refusedInputDeadLettered(pair, "previous");
  }, 30_000);
});

describe("this release's gateway, the previous release's worker", () => {
  const pair = pairing("previous_worker", () => ({ gateway: THIS_TREE, worker: previousTree }));

  it("applies every operation the gateway acknowledged: nothing lost, left alone, dead-lettered or failed", async () => {
    await everyOperationApplied(pair);
  }, 90_000);

  it("dead-letters an operation whose input is refused, in a job this release queued", async () => {
    await refusedInputDeadLettered(pair, "this");
  }, 30_000);

  it("leaves a job of a newer kind or version alone, untouched, until a worker that knows it applies it", async () => {
    const { project, queues } = pair;
    const lettersBefore = await deadLetters(project.id);
    // Payload version 2 of each batch kind, as the next release's gateways write it: this release's
    // workers read it, the previous release's do not.
    const operations = [identify(project.id, "u-future", { plan: "next" })];
    const trackedEvent = {
      projectId: project.id,
      key: "i:u-future",
      userId: "u-future",
      eventId: randomUUID(),
      name: "Came back",
      data: null,
      t: Date.now(),
      receivedAt: Date.now(),
    };
    const jobs: [Queue, Job][] = [
      [queues.identify, await queues.identify.add(PROFILE_OPERATIONS_JOB, profileOperationsJobData(operations, 2))],
      [queues.events, await queues.events.add(EVENTS_JOB, eventsJobData([trackedEvent], 2))],
      [queues.identify, await queues.identify.add(PROFILE_OPERATIONS_JOB, { kind: "someday", v: 1, events: [] })],
    ];
    const newerJobs = jobs.slice(0, 2).map(([, job]) => job);
    await waitFor("the previous release's worker to leave each job alone", async () =>
      (await Promise.all(jobs.map(([, job]) => job.getState()))).every((state) => state === "delayed")
        ? true
        : undefined,
    );
    expect(pair.worker.output()).toContain("job of an unknown kind or version left alone");
    for (const [queue, job] of jobs) {
      const now = (await queue.getJob(job.id as string)) as Job;
      expect({ data: now.data, attemptsMade: now.attemptsMade }).toEqual({ data: job.data, attemptsMade: 0 });
    }
    for (const queue of Object.values(queues)) expect(await queue.getFailedCount(), queue.name).toBe(0);
    expect(await deadLetters(project.id)).toEqual(lettersBefore);
    expect((await api(reader.url, project, "GET", "/users/u-future")).status).toBe(404);

    // Then this release's worker, which reads version 2, applies both (the previous release's stopped first).
    pair.worker.child.kill("SIGTERM");
    expect(await pair.worker.exited).toBe(0);
    const worker = startChild(join(THIS_TREE, "apps/worker/dist/main.js"), childEnv(testConfig(db.url, pair.prefix)));
    try {
      await waitFor("this release's worker to start", async () =>
        worker.output().includes("worker started") ? true : undefined,
      );
      for (const job of newerJobs) await job.promote();
      await waitFor("the version 2 jobs to be applied", async () =>
        (await Promise.all(newerJobs.map((job) => job.getState()))).every((state) => state === "completed")
          ? true
          : undefined,
      );
      expect(await api(reader.url, project, "GET", "/users/u-future")).toMatchObject({
        status: 200,
        body: { data: { plan: "next" } },
      });
      expect(await api(reader.url, project, "GET", "/users/u-future/events")).toMatchObject({
        status: 200,
        body: { data: [{ event_name: "Came back" }] },
      });
    } finally {
      worker.child.kill("SIGTERM");
      await worker.exited;
      for (const [, job] of jobs.slice(2)) await job.remove();
    }
  }, 60_000);
});
