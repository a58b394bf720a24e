import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findProfile } from "@cm/db";
import {
  profileKeyForId,
  tieBreaker,
  visibleProfile,
  type ChannelValue,
  type IdentifyEvent,
  type Json,
  type VisibleProfile,
} from "@cm/domain";
import { applyProfileOperations } from "@cm/worker";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { testProfileStores } from "../support/profile-stores";
import { createTestProject } from "../support/project";
import { createTestQueuePrefix } from "../support/queue";

/**
 * The rules of decisions.md "Identify", written as plainly as possible and independently of the
 * production merge: an update applies when it may create the profile, or when the profile was
 * created at or before its timestamp; each field then takes the value of the latest applicable
 * update that set it (ties: the larger tie-breaker of the value).
 */
function referenceProfile(events: IdentifyEvent[], knownTopics: Set<number>): VisibleProfile | null {
  const creating = events.filter((e) => !e.updateOnly);
  if (creating.length === 0) return null;
  const createdAt = Math.min(...creating.map((e) => e.t));
  const applicable = events.filter((e) => !e.updateOnly || e.t >= createdAt);

  const latest = new Map<string, { t: number; h: string; v: unknown }>();
  const write = (field: string, t: number, v: unknown) => {
    const h = tieBreaker(v);
    const current = latest.get(field);
    if (current === undefined || t > current.t || (t === current.t && h > current.h)) latest.set(field, { t, h, v });
  };
  for (const e of applicable) {
    if (e.email !== undefined) write("email", e.t, e.email);
    if (e.phoneNumber !== undefined) write("phone", e.t, e.phoneNumber);
    for (const [key, value] of Object.entries(e.data ?? {})) write(`data.${key}`, e.t, value);
    for (const channel of e.channels ?? []) write(`channel.${channel.type}:${channel.address}`, e.t, channel);
    for (const topic of e.topics ?? []) if (knownTopics.has(topic.id)) write(`topic.${topic.id}`, e.t, topic.status);
  }

  const fields = [...latest.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const pick = (prefix: string) =>
    fields
      .filter(([field]) => field.startsWith(prefix))
      .map(([field, entry]) => [field.slice(prefix.length), entry.v] as const);
  return {
    email: (latest.get("email")?.v as string | undefined) ?? null,
    phoneNumber: (latest.get("phone")?.v as string | undefined) ?? null,
    data: Object.fromEntries(pick("data.").filter(([, v]) => v !== null)) as Record<string, Json>,
    channels: pick("channel.").map(([, v]) => v as ChannelValue),
    topics: Object.fromEntries(pick("topic.")) as VisibleProfile["topics"],
    tags: [],
    unsubscribed: false,
  };
}

const PROFILES = ["alice", "bob", "carol@example.com"];
// Events queued by gateways before migration 007 keyed users known by email alone "e:<email>";
// they must land on the profile of that email like the events queued since.
const EVENT_KEYS = ["i:alice", "i:bob", "i:carol@example.com", "e:carol@example.com"];
const UNKNOWN_TOPIC = 999_999;

function eventArbitrary(projectId: number, topicIds: number[]) {
  return fc
    .record({
      key: fc.constantFrom(...EVENT_KEYS),
      // A few distinct times only, so that ties between different values are common.
      t: fc.integer({ min: 1, max: 5 }).map((n) => 1_700_000_000_000 + n * 1000),
      updateOnly: fc.boolean(),
      email: fc.option(fc.constantFrom("a@example.com", "b@example.com", "c@example.com"), { nil: undefined }),
      phoneNumber: fc.option(fc.constantFrom("+15550100", "+15550199"), { nil: undefined }),
      data: fc.option(
        fc.dictionary(
          fc.constantFrom("plan", "score", "tags", "language"),
          fc.constantFrom<Json>(
            null,
            "free",
            "pro",
            1,
            2,
            [1, "x"],
            { deep: true },
            "\u00e9t\u00e9",
            "\uff46",
            "\ud83d\ude00",
            "long ".repeat(20),
            "long ".repeat(21),
          ),
        ),
        { nil: undefined },
      ),
      channels: fc.option(
        fc.uniqueArray(
          fc.record({
            type: fc.constantFrom("push", "sms"),
            address: fc.constantFrom("device-1", "device-2"),
            platform: fc.constantFrom<string | null>("ios", "android", null),
          }),
          { selector: (c) => `${c.type}:${c.address}`, maxLength: 3 },
        ),
        { nil: undefined },
      ),
      topics: fc.option(
        fc.uniqueArray(
          fc.record({
            id: fc.constantFrom(...topicIds, UNKNOWN_TOPIC),
            status: fc.constantFrom("subscribed" as const, "unsubscribed" as const),
          }),
          { selector: (c) => c.id, maxLength: 3 },
        ),
        { nil: undefined },
      ),
    })
    .map((fields): IdentifyEvent => {
      const legacy = fields.key.startsWith("e:");
      const event = {
        projectId,
        key: fields.key,
        id: legacy ? null : fields.key.slice(2),
        t: fields.t,
        updateOnly: fields.updateOnly,
      } as IdentifyEvent;
      const email = legacy ? fields.key.slice(2) : fields.email;
      if (email !== undefined) event.email = email;
      if (fields.phoneNumber !== undefined) event.phoneNumber = fields.phoneNumber;
      if (fields.data !== undefined) event.data = fields.data;
      if (fields.channels !== undefined) event.channels = fields.channels;
      if (fields.topics !== undefined) event.topics = fields.topics;
      return event;
    });
}

let db: TestDatabase;
const queue = createTestQueuePrefix("convergence");
let stores: ReturnType<typeof testProfileStores>;
beforeAll(async () => {
  db = await createTestDatabase("convergence");
  stores = testProfileStores(db.sql, queue.prefix);
});
afterAll(async () => {
  await stores.close();
  await queue.cleanup();
  await db.drop();
});

async function storedProfiles(projectId: number) {
  return Promise.all(
    PROFILES.map(async (id) => {
      const stored = await findProfile(db.sql, projectId, profileKeyForId(id));
      return stored === null ? null : visibleProfile(stored.state);
    }),
  );
}

describe("identify convergence (property)", () => {
  it("any order, batching and redelivery of updates ends in the reference model's profile", async () => {
    // Each run gets a fresh project, so runs do not see each other's profiles.
    const seedProject = await createTestProject(db.sql, "seed");
    const topicIds = [await seedProject.topic("T1"), await seedProject.topic("T2")];

    await fc.assert(
      fc.asyncProperty(
        fc.array(eventArbitrary(0, topicIds), { minLength: 1, maxLength: 25 }),
        fc.infiniteStream(fc.nat()),
        async (templates, randomness) => {
          const project = await createTestProject(db.sql, "run");
          const remap = new Map<number, number>();
          for (const id of topicIds) remap.set(id, await project.topic(`T${id}`));
          const events = templates.map((e) => ({
            ...e,
            projectId: project.id,
            ...(e.topics ? { topics: e.topics.map((t) => ({ ...t, id: remap.get(t.id) ?? t.id })) } : {}),
          }));
          const knownTopics = new Set(remap.values());

          // Shuffle, redeliver some events, cut into batches, and apply two lanes concurrently.
          const draws = randomness[Symbol.iterator]();
          const next = (n: number) => (draws.next().value as number) % n;
          const deliveries = [...events, ...events.filter(() => next(3) === 0)];
          for (let i = deliveries.length - 1; i > 0; i -= 1) {
            const j = next(i + 1);
            [deliveries[i], deliveries[j]] = [deliveries[j] as IdentifyEvent, deliveries[i] as IdentifyEvent];
          }
          const batches: IdentifyEvent[][] = [];
          for (let i = 0; i < deliveries.length;) {
            const size = 1 + next(6);
            batches.push(deliveries.slice(i, i + size));
            i += size;
          }
          const lanes = [batches.filter((_, i) => i % 2 === 0), batches.filter((_, i) => i % 2 === 1)];
          await Promise.all(
            lanes.map(async (lane) => {
              for (const batch of lane) await applyProfileOperations(stores, batch);
            }),
          );

          const expected = PROFILES.map((id) =>
            referenceProfile(
              events.filter((e) => e.key.slice(2) === id),
              knownTopics,
            ),
          );
          expect(await storedProfiles(project.id)).toEqual(expected);
        },
      ),
      { numRuns: 60 },
    );
  });
});
