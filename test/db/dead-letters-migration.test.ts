import { migrate } from "@cm/db";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabaseBefore, type TestDatabase } from "../support/database";

// Migration 016: dead letters kept so far get their queue, an unknown error kind and the hash of
// their text; the same operation kept twice becomes one letter.

const MIGRATION = "016_dead_letters_replayable.sql";
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabaseBefore("dead_letters_migration", MIGRATION);
});
afterAll(() => db.drop());

describe("migration 016: dead letters replayable", () => {
  it("names each letter's queue, keeps one letter per operation, and reads them as before", async () => {
    const identify = '{"projectId":1,"key":"h:a","id":"a","t":1,"updateOnly":false}';
    const event = '{"projectId":1,"key":"h:a","userId":"a","eventId":"e1","name":"Paid","data":null,"t":1}';
    for (const text of [identify, event, identify, '{"unwritable":"Maximum call stack size exceeded"}']) {
      await db.sql`INSERT INTO identify_dead_letters (project_id, job_id, event, error) VALUES (1, 'j', ${text}, 'x')`;
    }
    expect((await migrate(db.sql))[0]).toBe(MIGRATION);
    const letters = await db.sql`
      SELECT event, queue, error_kind, operation_id = encode(sha256(convert_to(event, 'UTF8')), 'hex') AS hashed
        FROM identify_dead_letters ORDER BY id`;
    expect(letters).toEqual([
      { event: identify, queue: "identify", error_kind: "unknown", hashed: true },
      { event, queue: "events", error_kind: "unknown", hashed: true },
      {
        event: '{"unwritable":"Maximum call stack size exceeded"}',
        queue: "identify",
        error_kind: "unknown",
        hashed: true,
      },
    ]);
  });
});
