import { randomUUID } from "node:crypto";
import { Worker } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createProject,
  insertTopic,
  linkedComponents,
  profileKeySecrets,
  recordDeadLetter,
  recordLinkOperations,
  type Transaction,
} from "@cm/db";
import { MAX_LINKED_IDS, newTopicValues, profileKeysWith, withStoredKeys, type ProfileOperation } from "@cm/domain";
import { PROFILE_OPERATIONS_JOB, profileOperationsJobData, profileOperationsQueue } from "@cm/queue";
import { applyProfileOperations, applyRetention, storeTrackedEvents } from "@cm/app";
import { profileOperations, readProfileOrNull, storedKeyOf } from "../support/profile-operations";
import { testProfileStores } from "../support/profile-stores";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";
import { CITUS, layoutTimeout } from "../support/database";
import { testRedis } from "../support/redis";

let stack: TestStack;
let stores: ReturnType<typeof testProfileStores>;
beforeAll(async () => {
  stack = await createTestStack("profile_lifecycle");
  stores = testProfileStores(stack.db.sql, stack.config.queuePrefix);
});
afterAll(async () => {
  await stores.close();
  await stack.close();
});

function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, i) =>
    permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]),
  );
}

async function newProject() {
  const { id } = await createProject(stack.db.sql, "lifecycle");
  const topic = await insertTopic(stack.db.sql, id, newTopicValues({ name: "News" }));
  return { id, topicId: topic.id, ...profileOperations(id) };
}

const read = (projectId: number, id: string) => readProfileOrNull(stack.db.sql, projectId, id);

/** The row of a user as stored, every column of personal data included. */
async function rawRow(projectId: number, id: string) {
  const [row] = await stack.db.sql`
    SELECT external_id, created_t::float8 AS created_t, last_created_t, deleted_t::float8 AS deleted_t, email,
           phone_number, data, channels, topic_choices, tags, unsubscribed
      FROM profiles WHERE project_id = ${projectId} AND key = ${await storedKeyOf(stack.db.sql, projectId, id)}`;
  return row;
}

const ERASED_ROW = {
  external_id: null,
  last_created_t: null,
  email: null,
  phone_number: null,
  data: {},
  channels: {},
  topic_choices: {},
  tags: {},
  unsubscribed: null,
};

/** Applies every order of the operations, one job each, in a project of its own; returns each order's reads. */
async function readsInEveryOrder(
  scenario: (operations: ReturnType<typeof profileOperations>) => ProfileOperation[],
  check: (project: Awaited<ReturnType<typeof newProject>>) => Promise<unknown>,
) {
  const results: unknown[] = [];
  for (const order of permutations(scenario(profileOperations(0)).map((_, i) => i))) {
    const project = await newProject();
    const operations = scenario(project);
    for (const i of order) await applyProfileOperations(stores, [operations[i] as ProfileOperation]);
    results.push(await check(project));
  }
  return results;
}

describe("the profile lifecycle through the worker's dispatcher", () => {
  it(
    "ends in the same profile whatever order edits, tags, an unsubscribe and a reidentify are applied in",
    async () => {
      const results = await readsInEveryOrder(
        (p) => [
          p.identify("a", 1, { email: "a@example.com", data: { plan: "free", city: "Oslo" } }),
          p.edit("a", 2, { plan: "pro", city: null }),
          p.tags("a", 3, ["vip", "beta"]),
          p.reidentify("a", "b", 4),
          p.subscription("a", 5, true),
        ],
        async (p) =>
          [await read(p.id, "a"), await read(p.id, "b")].map((profile) => ({ ...profile, topicId: p.topicId })),
      );
      expect(results).toHaveLength(120);
      for (const reads of results) {
        for (const profile of reads as Record<string, unknown>[]) {
          expect(profile).toMatchObject({
            id: "b",
            email: "a@example.com",
            data: { plan: "pro" },
            tags: ["beta", "vip"],
            unsubscribed: true,
            topics: [{ id: profile.topicId, name: "News", status: "unsubscribed", source: "global" }],
          });
        }
      }
    },
    layoutTimeout(30_000),
  );

  it(
    "erases in every order: late operations and links stamped before the erasure bring nothing back",
    async () => {
      const results = await readsInEveryOrder(
        (p) => [
          p.identify("a", 1, { email: "a@example.com", data: { plan: "free" } }),
          p.edit("a", 2, { plan: "pro" }),
          p.reidentify("a", "b", 3),
          p.delete("b", 4),
          p.identify("b", 5, { data: { fresh: true } }),
        ],
        async (p) => ({ a: await read(p.id, "a"), b: await read(p.id, "b"), rowA: await rawRow(p.id, "a") }),
      );
      expect(results).toHaveLength(120);
      for (const result of results) {
        expect(result).toMatchObject({
          a: { id: "b", email: null, data: { fresh: true }, tags: [], unsubscribed: false },
          b: { id: "b", email: null, data: { fresh: true }, tags: [], unsubscribed: false },
          rowA: { ...ERASED_ROW, deleted_t: 4, created_t: 4 },
        });
      }
    },
    layoutTimeout(30_000),
  );

  it("erases every value physically, and leaves a tombstone that later operations stamped before it cannot revive", async () => {
    const p = await newProject();
    await applyProfileOperations(stores, [
      p.identify("gone", 1, {
        email: "gone@example.com",
        phoneNumber: "+15550100",
        data: { plan: "pro" },
        channels: [{ type: "push", address: "device-1", platform: "ios" }],
        topics: [{ id: p.topicId, status: "unsubscribed" }],
      }),
      p.tags("gone", 2, ["vip"]),
      p.subscription("gone", 2, true),
    ]);
    expect(await read(p.id, "gone")).toMatchObject({ email: "gone@example.com", tags: ["vip"] });

    await applyProfileOperations(stores, [p.delete("gone", 10)]);
    expect(await read(p.id, "gone")).toBeNull();
    expect(await rawRow(p.id, "gone")).toEqual({ ...ERASED_ROW, created_t: 10, deleted_t: 10 });

    await applyProfileOperations(stores, [
      p.identify("gone", 9, { email: "late@example.com", data: { late: true } }),
      p.edit("gone", 10, { late: true }),
      p.tags("gone", 3, ["late"]),
      p.subscription("gone", 4, false),
    ]);
    expect(await read(p.id, "gone")).toBeNull();
    expect(await rawRow(p.id, "gone")).toEqual({ ...ERASED_ROW, created_t: 10, deleted_t: 10 });

    // An id nobody used yet: its erasure is kept too.
    await applyProfileOperations(stores, [p.delete("unknown", 10), p.identify("unknown", 9, { email: "u@x.co" })]);
    expect(await rawRow(p.id, "unknown")).toEqual({ ...ERASED_ROW, created_t: 10, deleted_t: 10 });

    // An identify stamped after the erasure starts a new profile.
    await applyProfileOperations(stores, [p.identify("gone", 11, { data: { again: true } })]);
    expect(await read(p.id, "gone")).toMatchObject({
      email: null,
      data: { again: true },
      tags: [],
      unsubscribed: false,
    });
  });

  it("erases an id linked before the erasure by a reidentify that arrives after it", async () => {
    const p = await newProject();
    await applyProfileOperations(stores, [p.delete("new", 5)]);
    await applyProfileOperations(stores, [p.identify("old", 1, { email: "old@example.com", data: { plan: "free" } })]);
    expect(await read(p.id, "old")).toMatchObject({ email: "old@example.com" });

    await applyProfileOperations(stores, [p.reidentify("old", "new", 3)]);
    expect(await read(p.id, "old")).toBeNull();
    expect(await rawRow(p.id, "old")).toEqual({ ...ERASED_ROW, created_t: 5, deleted_t: 5 });

    // A link stamped after the erasure joins a profile the erasure never reached.
    await applyProfileOperations(stores, [
      p.identify("other", 1, { email: "other@example.com" }),
      p.reidentify("other", "new", 6),
    ]);
    expect(await read(p.id, "new")).toMatchObject({ id: "new", email: "other@example.com" });
  });

  it("keeps what was sent to the new id of a reidentify through retention, though that id was never identified", async () => {
    const p = await newProject();
    await applyProfileOperations(stores, [
      p.identify("a", 1, { data: { plan: "free" } }),
      p.reidentify("a", "b", 2),
      p.edit("b", 3, { plan: "pro" }),
      p.tags("b", 3, ["vip"]),
      p.subscription("b", 3, true),
    ]);
    const expected = { id: "b", data: { plan: "pro" }, tags: ["vip"], unsubscribed: true };
    expect(await read(p.id, "b")).toMatchObject(expected);

    await stack.db.sql`UPDATE profiles SET updated_at = now() - interval '400 days' WHERE project_id = ${p.id}`;
    await applyRetention(stack.db.sql, [], {
      failedJobWarnDays: 14,
      deadLetterWarnDays: 30,
      hiddenProfileRetentionDays: 30,
      eventRetentionDays: 90,
      changeRetentionDays: 7,
    });
    expect(await read(p.id, "b")).toMatchObject(expected);
  });

  it(
    "refuses a reidentify that would link more than MAX_LINKED_IDS ids into one profile, and applies the others",
    async () => {
      const p = await newProject();
      const chain = await Promise.all(
        Array.from({ length: MAX_LINKED_IDS }, (_, n) => storedKeyOf(stack.db.sql, p.id, `c${n + 1}`)),
      );
      await stack.db.sql`
      INSERT INTO profile_links (project_id, from_key, to_key, t)
      SELECT ${p.id}, (${chain}::text[])[n], (${chain}::text[])[n + 1], n
        FROM generate_series(1, ${MAX_LINKED_IDS - 1}) AS n`;
      const outcome = await applyProfileOperations(stores, [
        p.reidentify(`c${MAX_LINKED_IDS}`, "one-too-many", 5_000),
        p.identify("solo", 1),
        p.reidentify("solo", "solo-new", 2),
      ]);
      expect(outcome.poisoned.map(({ operation, error }) => [operation.id, String(error)])).toEqual([
        [`c${MAX_LINKED_IDS}`, expect.stringMatching(/would link more than 1000 ids into one profile/)],
      ]);
      expect(await read(p.id, "solo")).toMatchObject({ id: "solo-new" });
      expect(
        await stack.db.sql`
        SELECT 1 FROM profile_links
         WHERE project_id = ${p.id} AND to_key = ${await storedKeyOf(stack.db.sql, p.id, "one-too-many")}`,
      ).toHaveLength(0);
    },
    layoutTimeout(30_000),
  );

  it("refuses links that join profiles past the limit together, whichever of their ids the job names", async () => {
    const p = await newProject();
    const star = (hub: string, count: number) =>
      Array.from({ length: count }, (_, n) => ({ from: `${hub}-${n}`, to: hub, t: 1 }));
    await stack.db.sql`
      INSERT INTO profile_links (project_id, from_key, to_key, t)
      SELECT ${p.id}, l."from", l."to", l.t
        FROM jsonb_to_recordset(${stack.db.sql.json([...star("a", 600), ...star("b", 600)])}) AS l ("from" text, "to" text, t bigint)`;
    // Each link alone keeps its profile within the limit; the third joins the two into 1,203 ids.
    const links = [
      { from: "a-new", to: "a", t: 2 },
      { from: "b-new", to: "b", t: 2 },
      { from: "a-0", to: "b-0", t: 2 },
    ];
    const keys = [...new Set(links.flatMap((link) => [link.from, link.to]))];
    await expect(recordLinkOperations(stack.db.sql, p.id, links, [], keys)).rejects.toThrow(
      /would link more than 1000 ids into one profile/,
    );
    await expect(recordLinkOperations(stack.db.sql, p.id, links.slice(0, 2), [], keys)).resolves.toBeDefined();
  });

  // Rows are counted in this session's statistics, which do not see the reads Citus sends to its shards.
  it.skipIf(CITUS)(
    "checks the limit with one walk of the job's profiles, not one per link, when they hold more ids together",
    async () => {
      const p = await newProject();
      const leaves = (hub: string, from: number, to: number) =>
        Array.from({ length: to - from + 1 }, (_, n) => ({ from: `${hub}-${from + n}`, to: hub, t: 1 }));
      await stack.db.sql`
        INSERT INTO profile_links (project_id, from_key, to_key, t)
        SELECT ${p.id}, l."from", l."to", l.t FROM jsonb_to_recordset(${stack.db.sql.json(leaves("hub1", 1, MAX_LINKED_IDS - 40))})
          AS l ("from" text, "to" text, t bigint)`;
      // 50 links into two profiles that hold 1,012 ids together, neither past the limit.
      const links = [...leaves("hub1", MAX_LINKED_IDS - 39, MAX_LINKED_IDS - 20), ...leaves("hub2", 1, 30)];
      const keys = [...new Set(links.flatMap((link) => [link.from, link.to]))];
      const linksRead = async (tx: Transaction) => {
        const [stats] = await tx<{ rows: number }[]>`
          SELECT (coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))::integer AS rows
            FROM pg_stat_xact_user_tables WHERE relname = 'profile_links'`;
        return stats?.rows ?? 0;
      };
      const { components, byJob, byRead } = await stack.db.sql.begin(async (tx) => {
        // Every row a scan finds is fetched from the table, and so counted, whatever the plan.
        await tx`SET LOCAL enable_indexonlyscan = off`;
        await tx`SET LOCAL enable_seqscan = off`;
        const recorded = await recordLinkOperations(tx, p.id, links, [], keys);
        const afterJob = await linksRead(tx);
        await linkedComponents(tx, p.id, keys);
        return { components: recorded, byJob: afterJob, byRead: (await linksRead(tx)) - afterJob };
      });
      expect(components.links).toHaveLength(MAX_LINKED_IDS - 40 + links.length);
      // The walk that reads the profiles (as a profile read does) and the check's walk of them:
      // about twice what the read alone costs (a walk per link read 60 times as much).
      expect(byJob).toBeLessThanOrEqual(3 * byRead);
    },
  );

  it("merges a user reidentified onto an id that already names a profile, field by field", async () => {
    const p = await newProject();
    await applyProfileOperations(stores, [
      p.identify("a", 1, { email: "a@example.com", data: { plan: "free", city: "Oslo" } }),
      p.tags("a", 1, ["from-a"]),
      p.identify("b", 2, { data: { plan: "pro" }, topics: [{ id: p.topicId, status: "unsubscribed" }] }),
      p.tags("b", 2, ["from-b"]),
      p.reidentify("a", "b", 3),
      p.edit("a", 4, { city: "Bergen" }),
    ]);
    const merged = {
      id: "b",
      email: "a@example.com",
      data: { plan: "pro", city: "Bergen" },
      tags: ["from-a", "from-b"],
      topics: [{ id: p.topicId, name: "News", status: "unsubscribed", source: "explicit" }],
    };
    expect(await read(p.id, "a")).toMatchObject(merged);
    expect(await read(p.id, "b")).toMatchObject(merged);

    await applyProfileOperations(stores, [p.reidentify("b", "a", 5)]);
    expect(await read(p.id, "b")).toMatchObject({ ...merged, id: "a" });
  });

  it("reads every topic unsubscribed while the user is unsubscribed, and the kept choices after a resubscribe", async () => {
    const p = await newProject();
    await applyProfileOperations(stores, [
      p.identify("u", 1, { topics: [{ id: p.topicId, status: "subscribed" }] }),
      p.subscription("u", 2, true),
    ]);
    expect((await read(p.id, "u"))?.topics).toEqual([
      { id: p.topicId, name: "News", status: "unsubscribed", source: "global" },
    ]);
    await applyProfileOperations(stores, [p.subscription("u", 3, false)]);
    expect(await read(p.id, "u")).toMatchObject({
      unsubscribed: false,
      topics: [{ id: p.topicId, name: "News", status: "subscribed", source: "explicit" }],
    });
  });

  it("removes the erased profile's operations from dead letters and failed jobs", async () => {
    const p = await newProject();
    const other = await newProject();
    // Dead-lettered as workers do, keyed as stored; the last queued by a gateway before
    // migration 007, naming the same profile.
    const keyOf = profileKeysWith(await profileKeySecrets(stack.db.sql, [p.id, other.id]));
    for (const operation of [
      p.identify("gone", 1),
      p.edit("other", 1, { a: 1 }),
      other.identify("gone", 1),
      { ...p.identify("gone", 1), key: "e:gone", id: null as unknown as string },
    ]) {
      await recordDeadLetter(stack.db.sql, {
        queue: "identify",
        projectId: operation.projectId,
        jobId: "j",
        event: withStoredKeys(operation, keyOf),
        error: "x",
      });
    }

    const redis = testRedis({ maxRetriesPerRequest: null });
    const queue = profileOperationsQueue(redis, stack.config.queuePrefix);
    const failing = new Worker(
      queue.name,
      async () => {
        throw new Error("Postgres is away");
      },
      { connection: redis.duplicate(), prefix: stack.config.queuePrefix },
    );
    const jobs = {
      mixed: [p.identify("gone", 1, { email: "gone@example.com" }), p.identify("other", 1), other.edit("gone", 1, {})],
      erasedOnly: [p.edit("gone", 2, { plan: "pro" }), p.tags("gone", 3, ["vip"])],
      afterTheErasure: [p.identify("gone", 20, { email: "new@example.com" }), p.reidentify("gone", "x", 1)],
    };
    const queued = Object.fromEntries(
      await Promise.all(
        Object.entries(jobs).map(async ([name, events]) => {
          const job = await queue.add(PROFILE_OPERATIONS_JOB, { events }, { attempts: 1 });
          return [name, job.id as string] as const;
        }),
      ),
    );
    // As the next release's gateways queue them (payload version 2: the operations named by their ids alone).
    const unkeyed = await queue.add(
      PROFILE_OPERATIONS_JOB,
      profileOperationsJobData([p.edit("gone", 4, { plan: "gone" }), p.identify("other", 2)], 2),
      { attempts: 1 },
    );
    try {
      await waitFor("the jobs to fail", async () => ((await queue.getFailedCount()) === 4 ? true : undefined));
      await applyProfileOperations(stores, [p.delete("gone", 10)]);

      const letters = await stack.db.sql<{ project_id: number; event: string }[]>`
        SELECT project_id, event FROM identify_dead_letters WHERE job_id = 'j' ORDER BY id`;
      expect(letters.map((letter) => [letter.project_id, JSON.parse(letter.event).id])).toEqual([
        [p.id, "other"],
        [other.id, "gone"],
      ]);

      const data = async (name: string) => (await queue.getJob(queued[name] as string))?.data.events;
      expect(await data("mixed")).toEqual([jobs.mixed[1], jobs.mixed[2]]);
      expect(await data("erasedOnly")).toBeUndefined();
      expect(await data("afterTheErasure")).toEqual(jobs.afterTheErasure);
      expect((await queue.getJob(unkeyed.id as string))?.data).toEqual({
        ...unkeyed.data,
        operations: [{ projectId: p.id, id: "other", t: 2, updateOnly: false }],
      });
    } finally {
      await failing.close();
      await queue.close();
      redis.disconnect();
    }
  });
  it("gives a profile a tracked event made the identify, edit and tags applied after the event, though stamped around it", async () => {
    // A batch's track and its user's operations go in jobs of two queues, applied in either order:
    // the track's job first makes the profile, the operations land on it when their job is applied.
    const p = await newProject();
    const track = { projectId: p.id, key: "", userId: "a", eventId: randomUUID(), name: "Signed up", data: null };
    await storeTrackedEvents(stores, [{ ...track, t: 2, receivedAt: 4 }]);
    expect(await read(p.id, "a")).toMatchObject({ email: null, data: {}, tags: [], event_count: 1 });

    await applyProfileOperations(stores, [
      p.identify("a", 1, { email: "a@example.com", data: { plan: "free" } }),
      p.edit("a", 3, { plan: "pro" }),
      p.tags("a", 4, ["vip", "beta"]),
    ]);
    expect(await read(p.id, "a")).toMatchObject({
      email: "a@example.com",
      data: { plan: "pro" },
      tags: ["beta", "vip"],
      event_count: 1,
      created_at: new Date(1).toISOString(),
    });
  });
});
