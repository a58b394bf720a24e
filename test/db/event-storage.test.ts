import { randomUUID } from "node:crypto";
import {
  connect,
  dayOf,
  deleteUserEventsBetween,
  dropEventPartitionsBefore,
  ensureEventPartitions,
  eraseUserEvents,
  eventPartitionDays,
  eventPartitionName,
  pruneEventKeys,
  storeEvents,
  type Sql,
} from "@cm/db";
import type { TrackedEvent } from "@cm/domain";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CITUS, createTestDatabase, type TestDatabase } from "../support/database";
import { waitFor } from "../support/wait";

// The events table's partitions (migration 013) and storeEvents against the real Postgres.

const DAY = 86_400_000;
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase("event_storage");
});
afterAll(() => db.drop());

const event = (t: number, fields: Partial<TrackedEvent> = {}): TrackedEvent => ({
  projectId: 1,
  key: "i:u",
  userId: "u",
  eventId: randomUUID(),
  name: "Clicked",
  data: null,
  t,
  receivedAt: t,
  ...fields,
});

/** Which table holds each stored event, by event id (on Citus, the partition a shard is of: its name without the shard's number). */
async function placement(): Promise<Record<string, string>> {
  const rows = await db.sql<
    { id: string; partition: string }[]
  >`SELECT id, regexp_replace(tableoid::regclass::text, '_[0-9]+$', '') AS partition FROM events`;
  return Object.fromEntries(rows.map((row) => [row.id, row.partition]));
}

describe("event partitions", () => {
  it("are made per UTC day, take each event by when it happened, move a day's rows out of the default, and are dropped whole", async () => {
    const today = dayOf(Date.UTC(2026, 10, 23, 15));
    expect(await ensureEventPartitions(db.sql, today - DAY, today + DAY)).toEqual([
      "events_p20261122",
      "events_p20261123",
      "events_p20261124",
    ]);
    expect(await ensureEventPartitions(db.sql, today - DAY, today + DAY)).toEqual([]);

    const inDay = event(today + 3_600_000);
    const nextDay = event(today + DAY + 1);
    const early = event(today - 3 * DAY);
    expect((await storeEvents(db.sql, [inDay, nextDay, early])).stored).toBe(3);
    expect(await placement()).toEqual({
      [inDay.eventId]: "events_p20261123",
      [nextDay.eventId]: "events_p20261124",
      [early.eventId]: "events_default",
    });

    // The day of `early` gets its partition late: its row moves out of the default.
    expect(await ensureEventPartitions(db.sql, today - 3 * DAY, today - 3 * DAY)).toEqual([
      eventPartitionName(today - 3 * DAY),
    ]);
    expect((await placement())[early.eventId]).toBe("events_p20261120");

    const old = event(today - 40 * DAY);
    await storeEvents(db.sql, [old]);
    expect(await dropEventPartitionsBefore(db.sql, today)).toEqual({
      dropped: ["events_p20261120", "events_p20261122"],
      rows: 1,
    });
    expect(Object.keys(await placement()).sort()).toEqual([inDay.eventId, nextDay.eventId].sort());
    expect((await eventPartitionDays(db.sql)).map(eventPartitionName)).toEqual([
      "events_p20261123",
      "events_p20261124",
    ]);
  });
});

describe("storeEvents", () => {
  it("stores an event once though two workers race to store it and its duplicates", async () => {
    const second: Sql = connect(db.url, { max: 2 });
    try {
      const t = Date.UTC(2026, 10, 23, 16);
      const dedup = { dedupKey: "same", dedupWindowMs: 300_000 };
      const batches = [0, 1, 2, 3].map((n) => [event(t + n, { projectId: 2, ...dedup })]);
      const results = await Promise.all(batches.map((batch, n) => storeEvents(n % 2 ? second : db.sql, batch)));
      expect(results.reduce((sum, result) => sum + result.stored, 0)).toBe(1);
      expect((await storeEvents(db.sql, [event(t + 300_000, { projectId: 2, ...dedup })])).stored).toBe(1);
      expect((await storeEvents(db.sql, [event(t - 300_000, { projectId: 2, ...dedup })])).stored).toBe(1);
      const [counted] = await db.sql`SELECT count(*)::integer AS n FROM events WHERE project_id = 2`;
      expect(counted?.n).toBe(3);

      expect(await pruneEventKeys(db.sql, t)).toBe(0);
      expect(await pruneEventKeys(db.sql, t + 3_600_000)).toBe(1);
    } finally {
      await second.end();
    }
  });

  // On Citus each shard plans its own part, with the values (libs/db storeEvents says why).
  it.skipIf(CITUS)(
    "reads only the job's users' profiles, whatever the statistics say of the profiles table",
    async () => {
      // The table as on a new database: 20,000 profiles of one project, never analyzed.
      await db.sql`ALTER TABLE profiles SET (autovacuum_enabled = false)`;
      await db.sql`
        INSERT INTO profiles (project_id, key, external_id, created_t, last_created_t, updated_at)
        SELECT 4, 'i:u-' || n, 'u-' || n, 1, 1, now() FROM generate_series(1, 20000) AS n`;
      const one = connect(db.url, { max: 1 });
      const profileRowsRead = async () => {
        await one`SELECT pg_stat_force_next_flush()`;
        const [row] = await db.sql<{ read: string }[]>`
          SELECT (seq_tup_read + coalesce(idx_tup_fetch, 0))::text AS read
            FROM pg_stat_user_tables WHERE relname = 'profiles'`;
        return Number(row?.read);
      };
      try {
        const before = await profileRowsRead();
        const job = Array.from({ length: 500 }, (_, n) => event(n, { projectId: 4, key: `i:u-${n * 40 + 1}` }));
        expect((await storeEvents(one, job)).stored).toBe(500);
        await waitFor("the statistics of the statement to be flushed", async () =>
          (await profileRowsRead()) > before ? true : undefined,
        );
        expect((await profileRowsRead()) - before).toBeLessThan(2_000);
      } finally {
        await one.end();
        await db.sql`ALTER TABLE profiles RESET (autovacuum_enabled)`;
      }
    },
  );

  it("stores a job applied again once: nothing twice, and every event the first try did not store", async () => {
    const t = Date.UTC(2026, 10, 24, 9);
    const [first, second, third] = [
      event(t, { projectId: 5 }),
      event(t + 1, { projectId: 5 }),
      event(t + 2, { projectId: 5 }),
    ];
    const keyed = event(t + 3, { projectId: 5, dedupKey: "applied-again", dedupWindowMs: 300_000 });
    expect((await storeEvents(db.sql, [first, second])).stored).toBe(2);
    // Its claim of the key is rolled back with the insert that found `first` stored: it is claimed again.
    expect((await storeEvents(db.sql, [first, second, third, keyed])).stored).toBe(2);
    expect((await storeEvents(db.sql, [first, second, third, keyed])).stored).toBe(0);
    const repeated = event(t + 4, { projectId: 5 });
    expect((await storeEvents(db.sql, [repeated, repeated])).stored).toBe(1);
    const rows = await db.sql<{ id: string }[]>`SELECT id FROM events WHERE project_id = 5 ORDER BY created_at`;
    expect(rows.map((row) => row.id)).toEqual([first, second, third, keyed, repeated].map((e) => e.eventId));
  });

  it("tells which users are no profile yet, and stores nothing stamped at or before an erasure of its user", async () => {
    await db.sql`
      INSERT INTO profiles (project_id, key, external_id, created_t, last_created_t, deleted_t, updated_at) VALUES
        (3, 'i:known', 'known', 1, 1, NULL, now()),
        (3, 'i:erased', 'erased', 100, NULL, 100, now())`;
    const result = await storeEvents(db.sql, [
      event(50, { projectId: 3, key: "i:known" }),
      event(100, { projectId: 3, key: "i:erased" }),
      event(101, { projectId: 3, key: "i:erased" }),
      event(50, { projectId: 3, key: "i:new" }),
    ]);
    expect(result.stored).toBe(3);
    expect(result.notProfiles.map((user) => user.key).sort()).toEqual(["i:erased", "i:new"]);
  });
});

describe("deleting events", () => {
  it("releases the deduplication keys the deleted events hold, and keeps a key a later event claimed since", async () => {
    const t = Date.UTC(2026, 10, 24, 10);
    const window = 300_000;
    const keyed = (at: number, dedupKey: string, key = "i:gone") =>
      event(at, { projectId: 6, key, dedupKey, dedupWindowMs: window });
    const stored = [keyed(t, "erased"), keyed(t, "claimed-since"), keyed(t, "deleted", "i:cleaned")];
    expect((await storeEvents(db.sql, stored)).stored).toBe(3);
    // Past the window, so it claims the key again; stamped after the erasure below, so it stays.
    expect((await storeEvents(db.sql, [keyed(t + window, "claimed-since")])).stored).toBe(1);

    expect(await eraseUserEvents(db.sql, 6, [{ key: "i:gone", t: t + 1 }])).toBe(2);
    expect(await deleteUserEventsBetween(db.sql, 6, ["i:cleaned"], null, null)).toBe(1);
    const keys = await db.sql<{ key: string }[]>`SELECT key FROM event_keys WHERE project_id = 6`;
    expect(keys.map((row) => row.key)).toEqual(["claimed-since"]);
    const again = [
      keyed(t + 10, "erased"),
      keyed(t + 10, "deleted", "i:cleaned"),
      keyed(t + window + 10, "claimed-since"),
    ];
    expect((await storeEvents(db.sql, again)).stored).toBe(2);
  });
});
