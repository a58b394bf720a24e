import { describe, expect, it } from "vitest";
import type { QueuedOperation } from "@cm/domain";
import {
  csvRowOperations,
  exportLineOperations,
  importEventId,
  segmentLineOperations,
  type Converted,
  type CsvMapping,
  type ImportContext,
} from "../../apps/ctl/src/import-records";

const NOW = Date.parse("2026-11-24T12:00:00Z");
const context: ImportContext = {
  projectId: 7,
  topicIds: new Map([["news", 3]]),
  now: NOW,
  startedAt: NOW - 60_000,
  sourceKey: "source-a",
};
const at = { ordinal: 42 };

function operations(converted: Converted): QueuedOperation[] {
  if (!converted.ok) throw new Error(converted.reason);
  return converted.operations;
}

const profileOps = (converted: Converted) =>
  operations(converted).map((queued) => (queued.queue === "profile-operations" ? queued.operation : null));

describe("segmentLineOperations", () => {
  it("makes an identify of a Segment identify, traits' email and phone as fields, the rest as data", () => {
    const [identify] = profileOps(
      segmentLineOperations(
        {
          type: "identify",
          userId: "u-1",
          traits: { email: "ada@example.com", phone: "+15550100", plan: "pro" },
          timestamp: "2026-01-02T03:04:05.000Z",
        },
        at,
        context,
      ),
    );
    // An identify carries no `op` (jobs queued before the other operations had none).
    expect(identify).toMatchObject({
      projectId: 7,
      id: "u-1",
      email: "ada@example.com",
      phoneNumber: "+15550100",
      data: { plan: "pro" },
      t: Date.parse("2026-01-02T03:04:05.000Z"),
    });
  });

  it("makes a track of a Segment track whose event id is the same on every import of its messageId", () => {
    const line = {
      type: "track",
      anonymousId: "anon-1",
      event: "Order Completed",
      properties: { total: 30 },
      messageId: "m-1",
      timestamp: "2026-01-02T03:04:05.000Z",
    };
    const [first] = operations(segmentLineOperations(line, at, context));
    const [again] = operations(segmentLineOperations(line, { ordinal: 99 }, context));
    const [other] = operations(segmentLineOperations({ ...line, messageId: "m-2" }, at, context));
    expect(first).toMatchObject({
      queue: "events",
      event: { userId: "anon-1", name: "Order Completed", data: { total: 30 }, t: Date.parse(line.timestamp) },
    });
    const eventId = (queued: QueuedOperation | undefined) => (queued?.queue === "events" ? queued.event.eventId : null);
    expect(eventId(first)).toBe(importEventId("source-a", "message m-1"));
    expect(eventId(again)).toBe(eventId(first));
    expect(eventId(other)).not.toBe(eventId(first));
  });

  it("refuses another message type and a time past the allowed skew, saying why", () => {
    expect(segmentLineOperations({ type: "page", userId: "u-1" }, at, context)).toEqual({
      ok: false,
      reason: 'type must be "identify" or "track" (a Segment message); it is "page"',
    });
    const ahead = new Date(NOW + 3_600_000).toISOString();
    expect(segmentLineOperations({ type: "identify", userId: "u-1", timestamp: ahead }, at, context)).toEqual({
      ok: false,
      reason: "timestamp must not be more than 5 minutes in the future",
    });
  });
});

describe("exportLineOperations", () => {
  it("stamps a line without times by its position, and sends an unsubscribe only for unsubscribed: true", () => {
    const line = { type: "profile", id: "u-1", data: { plan: "pro" }, topics: { News: "unsubscribed" } };
    const kept = profileOps(exportLineOperations({ ...line, unsubscribed: false }, at, context));
    expect(kept).toEqual([expect.objectContaining({ id: "u-1", t: 42, topics: [{ id: 3, status: "unsubscribed" }] })]);
    const unsubscribed = profileOps(exportLineOperations({ ...line, unsubscribed: true }, at, context));
    expect(unsubscribed.map((operation) => operation?.op ?? "identify")).toEqual(["identify", "subscription"]);
    expect(unsubscribed[1]).toMatchObject({ unsubscribed: true, t: 42 });
  });

  it("refuses a topic the target project does not have", () => {
    const converted = exportLineOperations(
      { type: "profile", id: "u-1", topics: { Weekly: "subscribed" } },
      at,
      context,
    );
    expect(converted).toEqual({
      ok: false,
      reason: 'topic "Weekly" does not exist in project 7; create it (ctl topic create)',
    });
  });
});

describe("csvRowOperations", () => {
  const mapping: CsvMapping = {
    idColumn: "id",
    emailColumn: "email",
    phoneColumn: null,
    stampColumn: null,
    eventNameColumn: null,
    eventIdColumn: null,
    dataColumns: null,
    ignoreColumns: ["cio_id"],
  };

  it("puts every column no flag names into data, as text, an empty cell left out", () => {
    const [identify] = profileOps(
      csvRowOperations({ id: "u-1", email: "", cio_id: "x9", plan: "pro", age: "" }, mapping, at, context),
    );
    expect(identify).toMatchObject({ id: "u-1", data: { plan: "pro" }, t: 42 });
    expect(identify).not.toHaveProperty("email");
  });
});
