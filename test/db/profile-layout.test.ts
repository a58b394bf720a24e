import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IdentifyEvent } from "@cm/domain";
import { applyStateOperations } from "@cm/worker";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { createTestProject } from "../support/project";

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

describe("profiles table layout", () => {
  it("lets a pass over every profile rewrite each row in place (HOT), as a topic default fan-out does", async () => {
    const project = await createTestProject(db.sql, "Layout");
    const events = Array.from({ length: PROFILES }, (_, n) => identify(project.id, n));
    for (let first = 0; first < PROFILES; first += 500)
      await applyStateOperations(db.sql, events.slice(first, first + 500));

    // The fan-out's write (libs/db topic-fanout.ts), counted by this transaction's own statistics.
    const [counts] = await db.sql
      .begin((tx) => [
        tx`UPDATE profiles SET topic_defaults = topic_defaults || '{"1": "unsubscribed"}', updated_at = now() WHERE project_id = ${project.id}`,
        tx<{ updated: number; hot: number }[]>`
        SELECT pg_stat_get_xact_tuples_updated('profiles'::regclass)::integer AS updated,
               pg_stat_get_xact_tuples_hot_updated('profiles'::regclass)::integer AS hot`,
      ])
      .then(([, rows]) => rows);

    expect(counts).toEqual({ updated: PROFILES, hot: PROFILES });
  });
});
