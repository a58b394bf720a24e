import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "@cm/db";
import type { IdentifyEvent } from "@cm/domain";
import { applyStateOperations } from "@cm/app";
import { CITUS, createTestDatabase, type TestDatabase } from "../support/database";
import { createTestProject } from "../support/project";
import { waitFor } from "../support/wait";

const PROFILES = 3_000;

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase("profile_layout");
});
afterAll(() => db.drop());

function identify(projectId: number, n: number): IdentifyEvent {
  const id = `user-${String(n).padStart(6, "0")}`;
  return {
    projectId,
    key: `i:${id}`,
    id,
    t: 1_700_000_000_000 + n,
    updateOnly: false,
    email: `${id}@example.com`,
    data: { plan: ["free", "team", "pro"][n % 3] as string, language: "en", logins: n % 97 },
    channels: [{ type: "push", address: `device-${n}`, platform: n % 2 ? "ios" : "android" }],
  };
}

interface RowUpdates {
  updated: number;
  hot: number;
}

/** The row updates of `write`, as its own transaction counts them. */
async function transactionUpdates(write: (tx: Db) => Promise<unknown>): Promise<RowUpdates> {
  return db.sql.begin(async (tx) => {
    await write(tx);
    const [counts] = await tx<RowUpdates[]>`
      SELECT pg_stat_get_xact_tuples_updated('profiles'::regclass)::integer AS updated,
             pg_stat_get_xact_tuples_hot_updated('profiles'::regclass)::integer AS hot`;
    return counts as RowUpdates;
  });
}

/**
 * On Citus the rows are in the shards, updated by the nodes' own backends: the row updates are
 * those their statistics gain, which each backend reports within seconds of its transaction.
 */
async function shardUpdates(write: (tx: Db) => Promise<unknown>): Promise<RowUpdates> {
  const totals = async () => {
    const [row] = await db.sql<RowUpdates[]>`
      SELECT coalesce(sum(split_part(result, ',', 1)::bigint), 0)::integer AS updated,
             coalesce(sum(split_part(result, ',', 2)::bigint), 0)::integer AS hot
        FROM run_command_on_shards('profiles', $$SELECT n_tup_upd || ',' || n_tup_hot_upd
                                                   FROM pg_stat_user_tables WHERE relid = '%s'::regclass$$)`;
    return row as RowUpdates;
  };
  const before = await totals();
  await write(db.sql);
  return waitFor(
    "the shards' statistics",
    async () => {
      const after = await totals();
      const gained = { updated: after.updated - before.updated, hot: after.hot - before.hot };
      return gained.updated >= PROFILES ? gained : undefined;
    },
    30_000,
  );
}

describe("profiles table layout", () => {
  it("lets a pass over every profile rewrite each row in place (HOT), as a topic default fan-out does", async () => {
    const project = await createTestProject(db.sql, "Layout");
    const events = Array.from({ length: PROFILES }, (_, n) => identify(project.id, n));
    for (let first = 0; first < PROFILES; first += 500)
      await applyStateOperations(db.sql, events.slice(first, first + 500));

    // The fan-out's write (libs/db topic-fanout.ts).
    const write = (tx: Db) =>
      tx`UPDATE profiles SET topic_defaults = topic_defaults || '{"1": "unsubscribed"}', updated_at = now() WHERE project_id = ${project.id}`;
    const counts = CITUS ? await shardUpdates(write) : await transactionUpdates(write);
    expect(counts).toEqual({ updated: PROFILES, hot: PROFILES });
  });
});
