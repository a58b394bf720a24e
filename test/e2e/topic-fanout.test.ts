import { producerConnection, TOPIC_FANOUT_JOB, topicFanoutQueue } from "@cm/queue";
import type { RunningWorker } from "@cm/worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestProject, type TestProject } from "../support/project";
import { createTestStack, type TestStack } from "../support/services";
import {
  fanoutGroups,
  fanoutOf,
  lockProfile,
  lockWaiters,
  materialised,
  seedProfiles,
  seededId,
  type SeededProfiles,
} from "../support/topic-fanout";
import { waitFor } from "../support/wait";
import { layoutTimeout } from "../support/database";

const PROFILES = 22_500; // five chunks: four full, one part
const EXPLICIT_EVERY = 10;

let stack: TestStack;
let base: string;
let worker: RunningWorker;

async function changeDefault(project: TestProject, topicId: number, status: "subscribed" | "unsubscribed") {
  const response = await fetch(`${base}/api/v2/topics/${topicId}`, {
    method: "PATCH",
    headers: { authorization: project.apiKey, "content-type": "application/json" },
    body: JSON.stringify({ default_status: status }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function track(project: TestProject, body: unknown) {
  const response = await fetch(`${base}/api/v2/users/track?auth_token=${encodeURIComponent(project.authToken)}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
}

async function topicOf(project: TestProject, userId: string, topicId: number) {
  const response = await fetch(`${base}/api/v2/users/${userId}`, { headers: { authorization: project.apiKey } });
  if (response.status !== 200) return undefined;
  const profile = (await response.json()) as { topics: { id: number; status: string; source: string }[] };
  return profile.topics.find((topic) => topic.id === topicId);
}

const finished = (topicId: number, generation = 1) =>
  waitFor(
    "the fan-out to finish",
    async () => {
      const fanout = await fanoutOf(stack.db.sql, topicId);
      return fanout?.generation === generation && fanout.finished ? fanout : undefined;
    },
    layoutTimeout(15_000),
  );

/** Waits until the fan-out has done `chunks` chunks and waits for the locked profile. */
const blockedAfter = (topicId: number, chunks: number) =>
  waitFor("the fan-out to reach the locked profile", async () =>
    (await fanoutOf(stack.db.sql, topicId))?.chunks === chunks && (await lockWaiters(stack.db.sql)) > 0
      ? true
      : undefined,
  );

/** A new user's id whose stored key comes before (or after) the seeded profile `bound`'s, as the fan-out orders keys. */
async function newIdKeyed(seeded: SeededProfiles, side: "before" | "after", bound: string): Promise<string> {
  const ids = Array.from({ length: 50 }, (_, n) => `late-${n}`);
  const [found] = await stack.db.sql<{ id: string }[]>`
    SELECT id FROM unnest(${ids}::text[], ${ids.map(seeded.keyOf)}::text[]) WITH ORDINALITY AS c(id, key, n)
     WHERE CASE WHEN ${side} = 'before' THEN key < ${seeded.keyOf(bound)} ELSE key > ${seeded.keyOf(bound)} END
     ORDER BY n LIMIT 1`;
  return (found as { id: string }).id;
}

/** A project of its own per test, with PROFILES profiles; every tenth chose "subscribed" explicitly. */
async function seededProject(name: string) {
  const project = await createTestProject(stack.db.sql, name);
  const topicId = await project.topic("News", "subscribed");
  const seeded = await seedProfiles(stack.db.sql, project.id, PROFILES, {
    topicId,
    status: "subscribed",
    every: EXPLICIT_EVERY,
  });
  // The first profile without an explicit choice (one the fan-out writes) from a place in its walk.
  const withoutChoiceFrom = (place: number) =>
    seeded.inKeyOrder.slice(place).find((id) => Number(id.slice(1)) % EXPLICIT_EVERY !== 0) as string;
  // The profile the tests lock: in the third of the five chunks.
  const locked = withoutChoiceFrom(12_000);
  const lock = () => lockProfile(stack.db.sql, project.id, seeded.keyOf(locked));
  return { project, topicId, withoutChoice: PROFILES - PROFILES / EXPLICIT_EVERY, seeded, withoutChoiceFrom, lock };
}

beforeAll(async () => {
  stack = await createTestStack("topic_fanout");
  base = (await stack.gateway()).url;
  worker = await stack.worker();
});
afterAll(() => stack.close());

// A fan-out writes every profile of a project, chunk by chunk: on Citus each chunk a distributed
// statement, whose shards run the change feed's capture (docs/scaling.md, "The change feed on Citus").
describe("fan-out of a default change", { timeout: layoutTimeout(30_000) }, () => {
  it("reaches every profile without an explicit choice, created before and during the fan-out", async () => {
    const { project, topicId, withoutChoice, seeded, withoutChoiceFrom, lock } =
      await seededProject("Before and during");
    const release = await lock();
    const reply = await changeDefault(project, topicId, "unsubscribed");
    expect(reply).toMatchObject({ status: 200, body: { default_status: "unsubscribed" } });
    // Readers resolve the default when they read: the change shows at once, fan-out or not.
    expect(await topicOf(project, seededId(20_001), topicId)).toMatchObject({
      status: "unsubscribed",
      source: "default",
    });

    await blockedAfter(topicId, 2);
    // New profiles behind the fan-out's position (the first two chunks) and ahead of it (the last two).
    const behind = await newIdKeyed(seeded, "before", seeded.inKeyOrder[9_999] as string);
    const ahead = await newIdKeyed(seeded, "after", seeded.inKeyOrder[15_000] as string);
    await track(project, { id: behind });
    await track(project, { id: ahead });
    await waitFor(
      "the new profiles",
      async () => ((await topicOf(project, ahead, topicId)) && (await topicOf(project, behind, topicId))) || undefined,
    );
    await release();
    const fanout = await finished(topicId);

    expect(fanout).toMatchObject({ chunks: 5, profiles_updated: withoutChoice + 1 });
    expect(await materialised(stack.db.sql, project.id, topicId)).toEqual({
      subscribed: 0,
      unsubscribed: withoutChoice + 1, // one was created ahead of the fan-out
      absent: 1, // the other behind it: readers use the topic's default
      explicitWithDefault: 0,
    });
    for (const id of [behind, ahead, seededId(1), withoutChoiceFrom(12_000), seededId(PROFILES - 1)]) {
      expect(await topicOf(project, id, topicId), id).toMatchObject({ status: "unsubscribed", source: "default" });
    }
    expect(await topicOf(project, seededId(10), topicId)).toMatchObject({ status: "subscribed", source: "explicit" });
  });

  it("never overwrites an explicit choice that arrives while it runs", async () => {
    const { project, topicId, seeded, withoutChoiceFrom, lock } = await seededProject("Explicit during");
    const release = await lock();
    await changeDefault(project, topicId, "unsubscribed");
    await blockedAfter(topicId, 2);

    // Behind the fan-out (already given the default), in the waiting chunk, and ahead of it.
    const choosers = [withoutChoiceFrom(2), withoutChoiceFrom(12_002), withoutChoiceFrom(21_002)];
    for (const id of choosers)
      await track(project, { id, preferences: { topics: [{ id: topicId, status: "subscribed" }] } });
    await waitFor("the choices to be applied", async () => {
      const topics = await Promise.all(choosers.map((id) => topicOf(project, id, topicId)));
      return topics.every((topic) => topic?.source === "explicit") || undefined;
    });
    await release();
    await finished(topicId);

    for (const id of choosers) {
      expect(await topicOf(project, id, topicId), id).toEqual({
        id: topicId,
        name: "News",
        status: "subscribed",
        source: "explicit",
      });
    }
    const [ahead] = await stack.db.sql`
      SELECT topic_defaults ? ${String(topicId)} AS "hasDefault" FROM profiles WHERE project_id = ${project.id} AND key = ${seeded.keyOf(choosers[2] as string)}`;
    expect(ahead).toEqual({ hasDefault: false });
  });

  it("holds an identify to a profile of a running chunk no longer than the statement of the profile's group", async () => {
    const { project, topicId, seeded, withoutChoiceFrom, lock } = await seededProject("Held by one group");
    const choose = (id: string) =>
      track(project, { id, preferences: { topics: [{ id: topicId, status: "subscribed" }] } });
    const chosen = (ids: string[]) =>
      waitFor(`${ids.length} choices to be applied`, async () => {
        const topics = await Promise.all(ids.map((id) => topicOf(project, id, topicId)));
        return topics.every((topic) => topic?.source === "explicit") || undefined;
      });
    // Profiles all through the third chunk (10,000 to 14,999 in key order), the one that waits.
    const sample = seeded.inKeyOrder.slice(10_000, 15_000).filter((_, n) => n % 50 === 25);
    const release = await lock();
    try {
      await changeDefault(project, topicId, "unsubscribed");
      await blockedAfter(topicId, 2);
      // Only the locked profile's group waits, and it holds only that profile and the rows it
      // updated before it: those of that group that come before the locked one in key order.
      const locked = withoutChoiceFrom(12_000);
      const at = seeded.inKeyOrder.indexOf(locked);
      const [lockedGroup, ...groups] = await fanoutGroups(stack.db.sql, [locked, ...sample].map(seeded.keyOf));
      const held = sample.filter((id, n) => groups[n] === lockedGroup && seeded.inKeyOrder.indexOf(id) <= at);
      const free = sample.filter((id) => !held.includes(id));
      expect(free.length).toBeGreaterThan(sample.length / 2);

      for (const id of free) await choose(id);
      await chosen(free);
      expect(await lockWaiters(stack.db.sql)).toBeGreaterThan(0); // the chunk still waits
      for (const id of held) await choose(id);
    } finally {
      await release();
    }
    await finished(topicId);
    await chosen(sample);
  });

  it("ends at the last value when the default changes twice quickly (A→B→A)", async () => {
    const { project, topicId, withoutChoice } = await seededProject("Twice quickly");
    await changeDefault(project, topicId, "unsubscribed");
    await changeDefault(project, topicId, "subscribed");
    const fanout = await finished(topicId, 2);
    expect(fanout.profiles_updated).toBe(withoutChoice);
    expect(await materialised(stack.db.sql, project.id, topicId)).toEqual({
      subscribed: withoutChoice,
      unsubscribed: 0,
      absent: 0,
      explicitWithDefault: 0,
    });
    expect(await topicOf(project, seededId(1), topicId)).toMatchObject({ status: "subscribed", source: "default" });
  });

  it("ends at the last value when the second change lands mid-way through the first fan-out", async () => {
    const { project, topicId, withoutChoice, lock } = await seededProject("Mid-way change");
    const release = await lock();
    await changeDefault(project, topicId, "unsubscribed");
    await blockedAfter(topicId, 2);
    // The chunk in progress holds the topic: the second change waits for it, then supersedes the fan-out.
    const second = changeDefault(project, topicId, "subscribed");
    await waitFor("the second change to wait", async () => ((await lockWaiters(stack.db.sql)) >= 2 ? true : undefined));
    await release();
    expect((await second).status).toBe(200);
    await finished(topicId, 2);
    expect(await materialised(stack.db.sql, project.id, topicId)).toEqual({
      subscribed: withoutChoice,
      unsubscribed: 0,
      absent: 0,
      explicitWithDefault: 0,
    });
  });

  it("does nothing for a change that leaves the default as it is", async () => {
    const { project, topicId } = await seededProject("Same default");
    expect((await changeDefault(project, topicId, "subscribed")).status).toBe(200);
    expect(await fanoutOf(stack.db.sql, topicId)).toBeUndefined();
  });

  it("hands the job back between chunks when the worker stops, and another resumes it", async () => {
    const { project, topicId, withoutChoice, lock } = await seededProject("Graceful stop");
    const release = await lock();
    await changeDefault(project, topicId, "unsubscribed");
    await blockedAfter(topicId, 2);
    const stopped = worker.stop();
    await release();
    await stopped;
    expect(await fanoutOf(stack.db.sql, topicId)).toMatchObject({ chunks: 3, finished: false });

    worker = await stack.worker();
    const fanout = await finished(topicId);
    expect(fanout).toMatchObject({ chunks: 5, profiles_updated: withoutChoice });
  });
});

describe("job kinds", () => {
  it("leaves a fan-out job of a version the worker does not know alone: neither run nor failed", async () => {
    const connection = producerConnection(stack.config);
    const queue = topicFanoutQueue(connection, stack.config.queuePrefix);
    try {
      const job = await queue.add(TOPIC_FANOUT_JOB, { kind: "topic-fanout", v: 2 as 1, topicId: 1, generation: 1 });
      await waitFor("the job left alone", async () => ((await job.getState()) === "delayed" ? true : undefined));
      expect(await queue.getFailedCount()).toBe(0);
      await job.remove();
    } finally {
      await queue.close();
      connection.disconnect();
    }
  });
});
