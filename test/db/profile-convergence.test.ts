import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findLinkedProfile, profileKeySecrets } from "@cm/db";
import {
  profileIdOf,
  profileKeyForId,
  profileKeysWith,
  stampBounds,
  stateFromOperation,
  tieBreaker,
  type ChannelValue,
  type IdentifyEvent,
  type Json,
  type ProfileOperation,
  type VisibleProfile,
  visibleProfile,
} from "@cm/domain";
import { applyProfileOperations } from "@cm/app";
import { testProfileStores } from "../support/profile-stores";
import { createTestQueuePrefix } from "../support/queue";
import { createTestDatabase, type TestDatabase, layoutTimeout } from "../support/database";
import { createTestProject } from "../support/project";

// The rules of docs/profiles.md, written as plainly as possible and independently of the
// production merge (profile-state.ts, the worker's SQL): they see the whole set of operations
// at once, where the workers see them one job at a time, in any order, some twice.

type Link = { from: string; to: string; t: number };
type Stamped = { t: number; h: string; v: unknown };

const rowKey = (op: ProfileOperation) => profileKeyForId(profileIdOf(op));
const isIdentify = (op: ProfileOperation): op is IdentifyEvent => op.op === undefined || op.op === "identify";
const creates = (op: ProfileOperation) => isIdentify(op) && !op.updateOnly;

/** The keys linked to `key` by reidentifies stamped at or before `until`. */
function linkedKeys(links: Link[], key: string, until = Infinity): Set<string> {
  const keys = new Set([key]);
  let size = 0;
  while (size !== keys.size) {
    size = keys.size;
    for (const link of links) {
      if (link.t > until) continue;
      if (keys.has(link.from) || keys.has(link.to)) keys.add(link.from).add(link.to);
    }
  }
  return keys;
}

/** The latest erasure of a row: of every delete whose profile held the row when it was stamped. */
function erasedAt(ops: ProfileOperation[], links: Link[], key: string): number {
  let erased = -Infinity;
  for (const op of ops) {
    if (op.op === "delete" && linkedKeys(links, rowKey(op), op.t).has(key)) erased = Math.max(erased, op.t);
  }
  return erased;
}

/**
 * Whether a row keeps its id (a read shows it): never erased, or holding something stamped after
 * its erasure, a reidentify naming it included, since the ids of what an erasure keeps are not kept.
 */
function keepsId(ops: ProfileOperation[], links: Link[], key: string): boolean {
  const erased = erasedAt(ops, links, key);
  return (
    erased === -Infinity ||
    links.some((link) => link.to === key && link.t > erased) ||
    ops.some(
      (op) =>
        op.op !== "delete" &&
        op.op !== "reidentify" &&
        rowKey(op) === key &&
        op.t > erased &&
        stampBounds(stateFromOperation(op)) !== null,
    )
  );
}

/**
 * One row: whether it is a profile (created after its latest erasure), from when updates that
 * cannot create apply to it (its first creation, or its erasure if later), and the operations
 * on it that its erasure left.
 */
function referenceRow(ops: ProfileOperation[], links: Link[], key: string) {
  const erased = erasedAt(ops, links, key);
  const own = ops.filter((op) => op.op !== "delete" && op.op !== "reidentify" && rowKey(op) === key);
  const creations = own.filter(creates).map((op) => op.t);
  return {
    exists: creations.some((t) => t > erased),
    from: creations.length === 0 ? Infinity : Math.max(Math.min(...creations), erased),
    kept: own.filter((op) => op.t > erased),
  };
}

type ReadProfile = VisibleProfile & { id: string };

/**
 * The profile read of `id`: the rows of every key linked to it, merged field by field; an
 * update that cannot create applies from the earliest creation among them. It shows the new id
 * of the latest reidentify (between two of one stamp, the one whose stored key is larger), or
 * `id` when an erasure left that row without it.
 */
function referenceRead(
  ops: ProfileOperation[],
  id: string,
  knownTopics: Set<number>,
  storedKey: (key: string) => string,
): ReadProfile | null {
  const links = ops.flatMap((op) => (op.op === "reidentify" ? [{ from: rowKey(op), to: op.newKey, t: op.t }] : []));
  const group = linkedKeys(links, profileKeyForId(id));
  const rows = [...group].map((key) => referenceRow(ops, links, key));
  if (!rows.some((row) => row.exists)) return null;
  const from = Math.min(...rows.map((row) => row.from));
  const fields = new Map<string, Stamped>();
  const write = (field: string, t: number, v: unknown) => {
    const h = tieBreaker(v);
    const current = fields.get(field);
    if (current === undefined || t > current.t || (t === current.t && h > current.h)) fields.set(field, { t, h, v });
  };
  for (const op of rows.flatMap((row) => row.kept)) {
    if (!creates(op) && op.t < from) continue;
    if (isIdentify(op)) {
      if (op.email !== undefined) write("email", op.t, op.email);
      if (op.phoneNumber !== undefined) write("phone", op.t, op.phoneNumber);
      for (const [k, v] of Object.entries(op.data ?? {})) write(`data.${k}`, op.t, v);
      for (const c of op.channels ?? []) write(`channel.${c.type}:${c.address}`, op.t, c);
      for (const topic of op.topics ?? [])
        if (knownTopics.has(topic.id)) write(`topic.${topic.id}`, op.t, topic.status);
    } else if (op.op === "edit") {
      for (const [k, v] of Object.entries(op.changes)) write(`data.${k}`, op.t, v);
    } else if (op.op === "tags") {
      for (const tag of op.remove) write(`tag.${tag}`, op.t, false);
      for (const tag of op.add) write(`tag.${tag}`, op.t, true);
    } else if (op.op === "subscription") {
      write("unsubscribed", op.t, op.unsubscribed);
    }
  }
  let latest: Link | undefined;
  for (const link of links) {
    if (!group.has(link.from)) continue;
    if (latest === undefined || link.t > latest.t || (link.t === latest.t && storedKey(link.to) > storedKey(latest.to)))
      latest = link;
  }
  const sorted = [...fields.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const pick = (prefix: string) =>
    sorted
      .filter(([field]) => field.startsWith(prefix))
      .map(([field, entry]) => [field.slice(prefix.length), entry.v] as const);
  return {
    id: latest !== undefined && keepsId(ops, links, latest.to) ? latest.to.slice(2) : id,
    email: (fields.get("email")?.v as string | undefined) ?? null,
    phoneNumber: (fields.get("phone")?.v as string | undefined) ?? null,
    data: Object.fromEntries(pick("data.").filter(([, v]) => v !== null)) as Record<string, Json>,
    channels: pick("channel.").map(([, v]) => v as ChannelValue),
    topics: Object.fromEntries(pick("topic.")) as VisibleProfile["topics"],
    tags: pick("tag.")
      .filter(([, on]) => on === true)
      .map(([tag]) => tag),
    unsubscribed: (fields.get("unsubscribed")?.v as boolean | undefined) ?? false,
  };
}

const READ_IDS = ["alice", "bob", "carol@example.com", "dave"];

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

const USER_KEYS = ["i:alice", "i:bob", "i:carol@example.com"];
const stampArbitrary = fc.integer({ min: 1, max: 5 }).map((n) => 1_700_000_000_000 + n * 1000);

/** Every other operation, on the same users and stamps as the identifies. */
function operationArbitrary(projectId: number): fc.Arbitrary<ProfileOperation> {
  const target = fc.record({ key: fc.constantFrom(...USER_KEYS), t: stampArbitrary });
  const on = <T>(fields: fc.Arbitrary<T>) =>
    fc.tuple(target, fields).map(([{ key, t }, rest]) => ({ projectId, key, id: key.slice(2), t, ...rest }));
  const tagSet = fc.subarray(["vip", "beta", "churn"]);
  return fc.oneof(
    on(
      fc.record({
        op: fc.constant("edit" as const),
        changes: fc.dictionary(fc.constantFrom("plan", "seats"), fc.constantFrom<Json>(null, "team", 3)),
      }),
    ),
    on(fc.record({ op: fc.constant("tags" as const), add: tagSet, remove: tagSet })),
    on(fc.record({ op: fc.constant("subscription" as const), unsubscribed: fc.boolean() })),
    on(fc.record({ op: fc.constant("delete" as const) })),
    fc
      .tuple(target, fc.constantFrom("alice", "bob", "carol@example.com", "dave"))
      .filter(([{ key }, newId]) => key !== profileKeyForId(newId))
      .map(([{ key, t }, newId]) => ({
        projectId,
        key,
        id: key.slice(2),
        t,
        op: "reidentify" as const,
        newId,
        newKey: profileKeyForId(newId),
      })),
  );
}

let db: TestDatabase;
let stores: ReturnType<typeof testProfileStores>;
const queue = createTestQueuePrefix("convergence");
beforeAll(async () => {
  db = await createTestDatabase("convergence");
  stores = testProfileStores(db.sql, queue.prefix);
});
afterAll(async () => {
  await stores.close();
  await queue.cleanup();
  await db.drop();
});

/** What the profile read shows: the rows of the id's linked ids, as the gateway reads them. */
async function storedRead(projectId: number, id: string): Promise<ReadProfile | null> {
  const keyOf = profileKeysWith(await profileKeySecrets(db.sql, [projectId]));
  const { key, rows } = await findLinkedProfile(db.sql, projectId, keyOf(projectId, id));
  const profile = visibleProfile(...rows.map((row) => row.state));
  return profile === null ? null : { id: rows.find((row) => row.key === key)?.externalId ?? id, ...profile };
}

describe("profile convergence (property)", () => {
  it(
    "any order, batching and redelivery of every operation ends in the reference model's profiles",
    async () => {
      // Each run gets a fresh project, so runs do not see each other's profiles.
      const seedProject = await createTestProject(db.sql, "seed");
      const topicIds = [await seedProject.topic("T1"), await seedProject.topic("T2")];

      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.oneof(
              { arbitrary: eventArbitrary(0, topicIds), weight: 2 },
              { arbitrary: operationArbitrary(0), weight: 3 },
            ),
            // Long enough that most runs create, erase and link profiles, and hit ties.
            { minLength: 10, maxLength: 40, size: "max" },
          ),
          fc.infiniteStream(fc.nat()),
          async (templates, randomness) => {
            const project = await createTestProject(db.sql, "run");
            const remap = new Map<number, number>();
            for (const id of topicIds) remap.set(id, await project.topic(`T${id}`));
            const operations: ProfileOperation[] = templates.map((op) => ({
              ...op,
              projectId: project.id,
              ...("topics" in op && op.topics
                ? { topics: op.topics.map((t) => ({ ...t, id: remap.get(t.id) ?? t.id })) }
                : {}),
            }));
            const knownTopics = new Set(remap.values());

            // Shuffle, redeliver some operations, cut into batches, and apply two lanes concurrently.
            const draws = randomness[Symbol.iterator]();
            const next = (n: number) => (draws.next().value as number) % n;
            const deliveries = [...operations, ...operations.filter(() => next(3) === 0)];
            for (let i = deliveries.length - 1; i > 0; i -= 1) {
              const j = next(i + 1);
              [deliveries[i], deliveries[j]] = [deliveries[j] as ProfileOperation, deliveries[i] as ProfileOperation];
            }
            const batches: ProfileOperation[][] = [];
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

            const keyOf = profileKeysWith(await profileKeySecrets(db.sql, [project.id]));
            const storedKey = (key: string) => keyOf(project.id, key.slice(2));
            const expected = READ_IDS.map((id) => referenceRead(operations, id, knownTopics, storedKey));
            const stored = await Promise.all(READ_IDS.map((id) => storedRead(project.id, id)));
            expect(stored).toEqual(expected);
          },
        ),
        { numRuns: 100 },
      );
    },
    layoutTimeout(120_000),
  );
});
