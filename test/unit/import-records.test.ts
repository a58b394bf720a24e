import { describe, expect, it } from "vitest";
import { namedEventId, parseOperation, type QueuedOperation } from "@cm/domain";
import {
  csvRowOperations,
  DEFAULT_CSV_MAPPING,
  exportLineOperations,
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

  it("makes a track of a Segment track that is one event wherever its messageId is, as the API's message_id", () => {
    const line = {
      type: "track",
      anonymousId: "anon-1",
      event: "Order Completed",
      properties: { total: 30 },
      messageId: "m-1",
      timestamp: "2026-01-02T03:04:05.000Z",
    };
    const [first] = operations(segmentLineOperations(line, at, context));
    const [again] = operations(segmentLineOperations(line, { ordinal: 99 }, { ...context, sourceKey: "source-b" }));
    const [other] = operations(segmentLineOperations({ ...line, messageId: "m-2" }, at, context));
    expect(first).toMatchObject({
      queue: "events",
      event: { userId: "anon-1", name: "Order Completed", data: { total: 30 }, t: Date.parse(line.timestamp) },
    });
    const event = (queued: QueuedOperation | undefined) => (queued?.queue === "events" ? queued.event : null);
    expect(event(again)?.eventId).toBe(event(first)?.eventId);
    expect(event(other)?.eventId).not.toBe(event(first)?.eventId);
    // The key and window of the same event tracked live with the messageId as extras.message_id.
    const live = parseOperation(
      "track",
      { identity: { id: "anon-1" }, event_name: "Order Completed", extras: { message_id: "m-1" } },
      { projectId: 7, receivedAt: NOW, eventId: "00000000-0000-4000-8000-000000000000", dedupWindowMs: 300_000 },
    );
    if (!live.ok || live.value.queue !== "events") throw new Error("the live track is refused");
    expect(event(first)).toMatchObject({
      dedupKey: live.value.event.dedupKey,
      dedupWindowMs: live.value.event.dedupWindowMs,
    });
    expect(event(other)?.dedupKey).not.toBe(live.value.event.dedupKey);
  });

  it("names a track without a messageId by the source and its line", () => {
    const line = { type: "track", userId: "u-1", event: "Opened", timestamp: "2026-01-02T03:04:05.000Z" };
    const [track] = operations(segmentLineOperations(line, at, context));
    expect(track).toMatchObject({ event: { eventId: namedEventId("source-a", "line 42") } });
    expect(track).not.toHaveProperty("event.dedupKey");
    const [elsewhere] = operations(segmentLineOperations(line, at, { ...context, sourceKey: "source-b" }));
    expect(elsewhere).not.toMatchObject({ event: { eventId: namedEventId("source-a", "line 42") } });
  });

  it("refuses a message of no type of the spec and a time past the allowed skew, saying why", () => {
    expect(segmentLineOperations({ type: "order", userId: "u-1" }, at, context)).toEqual({
      ok: false,
      reason: 'type must be one of "identify", "track", "page", "screen", "group", "alias"; it is "order"',
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
  const mapping: CsvMapping = { ...DEFAULT_CSV_MAPPING, ignoreColumns: ["cio_id"] };
  const ops = (converted: Converted) => profileOps(converted).map((operation) => operation?.op ?? "identify");

  it("puts every column no flag names into data, as text, an empty cell left out", () => {
    const [identify] = profileOps(
      csvRowOperations({ id: "u-1", email: "", cio_id: "x9", plan: "pro", age: "" }, mapping, at, context),
    );
    expect(identify).toMatchObject({ id: "u-1", data: { plan: "pro" }, t: 42 });
    expect(identify).not.toHaveProperty("email");
  });

  it("adds the tags of a cell, separated by ; or , or as a JSON list, stamped as the row", () => {
    const tagged = { ...mapping, tagsColumn: "tags", stampColumn: "at" };
    const row = { id: "u-1", email: "", at: "2026-01-02T03:04:05Z", tags: " vip; beta,new ;" };
    const [identify, tags] = profileOps(csvRowOperations(row, tagged, at, context));
    expect(identify).toMatchObject({ id: "u-1", data: {} });
    expect(tags).toMatchObject({ op: "tags", id: "u-1", add: ["vip", "beta", "new"], t: Date.parse(row.at) });
    const json = profileOps(csvRowOperations({ ...row, tags: '["a; b", "c"]' }, tagged, at, context));
    expect(json[1]).toMatchObject({ op: "tags", add: ["a; b", "c"] });
    expect(ops(csvRowOperations({ ...row, tags: "" }, tagged, at, context))).toEqual(["identify"]);
    expect(ops(csvRowOperations({ ...row, tags: ";" }, tagged, at, context))).toEqual(["identify"]);
  });

  it("refuses a tags cell that is no list, or a JSON list of other than tags, saying why", () => {
    const tagged = { ...mapping, tagsColumn: "labels" };
    expect(csvRowOperations({ id: "u-1", labels: "[vip" }, tagged, at, context)).toEqual({
      ok: false,
      reason: "labels must be a JSON list of tags, or tags separated by ; or ,",
    });
    const numbers = csvRowOperations({ id: "u-1", labels: "[1, 2]" }, tagged, at, context);
    // Refused by the tags edit's own reader, in the API's words.
    expect(numbers).toEqual({
      ok: false,
      reason: "add[0] must be a string of at most 255 characters; add[1] must be a string of at most 255 characters",
    });
  });

  it("unsubscribes for a true opt-out cell only, of the user by email where the row has no id", () => {
    const optOut = { ...mapping, unsubscribedColumn: "unsub" };
    for (const yes of ["true", "TRUE", "1", "yes", " Yes "]) {
      const converted = csvRowOperations({ id: "", email: "a@example.com", unsub: yes }, optOut, at, context);
      expect(profileOps(converted)[1]).toEqual(
        expect.objectContaining({ op: "subscription", id: "a@example.com", unsubscribed: true, t: 42 }),
      );
    }
    for (const no of ["false", "0", "no", ""]) {
      expect(ops(csvRowOperations({ id: "u-1", unsub: no }, optOut, at, context))).toEqual(["identify"]);
    }
    expect(csvRowOperations({ id: "u-1", unsub: "maybe" }, optOut, at, context)).toEqual({
      ok: false,
      reason: 'unsub must be true, false, 1, 0, yes or no; it is "maybe"',
    });
  });

  it("makes an event row of the same event id one event from any source, and refuses an id the API would", () => {
    const events = { ...mapping, eventNameColumn: "name", eventIdColumn: "message_id" };
    const event = (row: Record<string, string>, sourceKey = "source-a") => {
      const [queued] = operations(csvRowOperations(row, events, at, { ...context, sourceKey }));
      return queued?.queue === "events" ? queued.event : null;
    };
    const row = { id: "u-1", name: "Read", message_id: "v-1" };
    expect(event(row, "source-b")).toMatchObject({ eventId: event(row)?.eventId, dedupKey: event(row)?.dedupKey });
    expect(event(row)?.dedupKey).toEqual(expect.any(String));
    const uuid = "6F0C2B1E-6D3A-4C8B-9E1F-2A3B4C5D6E7F";
    expect(event({ ...row, message_id: uuid })?.eventId).toBe(uuid.toLowerCase());
    expect(event({ ...row, message_id: "" })?.eventId).toBe(namedEventId("source-a", "row 42"));
    expect(csvRowOperations({ ...row, message_id: "x".repeat(256) }, events, at, context)).toEqual({
      ok: false,
      reason: "message_id must be at most 255 characters",
    });
  });

  it("makes Vero's reserved tag an unsubscribe, not a tag, and leaves the columns to data in event rows", () => {
    const vero = { ...mapping, tagsColumn: "tags", unsubscribeTag: "unsubscribed" };
    const unsubscribing = profileOps(csvRowOperations({ id: "u-1", tags: "vip;unsubscribed" }, vero, at, context));
    expect(unsubscribing.map((operation) => operation?.op ?? "identify")).toEqual(["identify", "tags", "subscription"]);
    expect(unsubscribing[1]).toMatchObject({ add: ["vip"] });
    expect(ops(csvRowOperations({ id: "u-1", tags: "unsubscribed" }, vero, at, context))).toEqual([
      "identify",
      "subscription",
    ]);
    const [event] = operations(
      csvRowOperations({ id: "u-1", name: "Paid", tags: "vip" }, { ...vero, eventNameColumn: "name" }, at, context),
    );
    expect(event).toMatchObject({ queue: "events", event: { name: "Paid", data: { tags: "vip" } } });
  });
});
