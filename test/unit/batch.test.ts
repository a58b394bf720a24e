import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  compactJsonBytesAtMost,
  batchFromLines,
  batchOperations,
  inBatchOrder,
  isOversizedOperation,
  MAX_BATCH_OPERATIONS,
  MAX_BODY_BYTES,
  parseBatchOperation,
  problemText,
  type OperationContext,
  type QueuedOperation,
} from "@cm/domain";

const NOW = Date.parse("2026-06-01T12:00:00Z");
const CONTEXT: OperationContext = { projectId: 1, receivedAt: NOW, eventId: "event-1", dedupWindowMs: 0 };

/** The reason an operation is refused for, or null when it is accepted. */
function refusal(item: unknown): string | null {
  const parsed = parseBatchOperation(item, CONTEXT);
  return parsed.ok ? null : problemText(parsed.problems);
}

function accepted(item: unknown): QueuedOperation {
  const parsed = parseBatchOperation(item, CONTEXT);
  if (!parsed.ok) throw new Error(problemText(parsed.problems));
  return parsed.value;
}

/** The stamps inBatchOrder gives, by position. */
const stamps = (operations: QueuedOperation[]) =>
  inBatchOrder(operations, NOW).operations.map((operation) =>
    operation.queue === "profile-operations"
      ? operation.operation.t
      : operation.queue === "events"
        ? operation.event.t
        : null,
  );

describe("a batch body", () => {
  it("holds 1 to 1,000 operations in a batch list", () => {
    expect(batchOperations({ batch: [{}, 1] })).toEqual({ ok: true, value: [{}, 1] });
    const tooMany = batchOperations({ batch: Array.from({ length: MAX_BATCH_OPERATIONS + 1 }, () => ({})) });
    expect(tooMany.ok || problemText(tooMany.problems)).toBe("batch must hold 1 to 1000 operations; it holds 1001");
    const none = batchOperations({ batch: [] });
    expect(none.ok || problemText(none.problems)).toMatch(/^batch must hold 1 to 1000 operations/);
    for (const body of [[{ type: "identify" }], { operations: [] }, "text", null]) {
      const refused = batchOperations(body);
      expect(refused.ok || problemText(refused.problems), JSON.stringify(body)).toMatch(
        /^body must be a JSON object with a batch list/,
      );
    }
  });

  it("reads NDJSON as that list, a line that is not JSON refusing its operation only, blank lines none", () => {
    const { batch } = batchFromLines('{"type":"delete","id":"a"}\r\n\n{not json\n  \n{"type":"delete","id":"b"}\n');
    expect(batch).toHaveLength(3);
    expect(refusal(batch[0])).toBeNull();
    expect(refusal(batch[1])).toBe("line 3 is not valid JSON");
    expect(accepted(batch[2])).toMatchObject({ operation: { op: "delete", id: "b" } });
    const lines = Array.from({ length: MAX_BATCH_OPERATIONS + 5 }, () => "{}").join("\n");
    expect(batchFromLines(lines).batch).toHaveLength(MAX_BATCH_OPERATIONS + 5);
  });
});

describe("an operation of a batch", () => {
  it("is read by the reader of its single call, whatever its type", () => {
    expect(accepted({ type: "identify", id: 7, email: "a@b.co", data: '{"plan":"pro"}' })).toEqual({
      queue: "profile-operations",
      operation: {
        projectId: 1,
        key: "i:7",
        id: "7",
        t: NOW,
        updateOnly: false,
        email: "a@b.co",
        data: { plan: "pro" },
      },
    });
    expect(accepted({ type: "track", identity: { id: "u" }, event_name: "Paid" })).toMatchObject({
      queue: "events",
      event: { key: "i:u", name: "Paid", eventId: "event-1", t: NOW },
    });
    expect(accepted({ type: "edit", id: "u", changes: [] })).toMatchObject({ operation: { op: "edit", changes: {} } });
    expect(accepted({ type: "tags", id: "u", add: '["vip"]' })).toMatchObject({ operation: { add: ["vip"] } });
    expect(accepted({ type: "unsubscribe", email: "a@b.co" })).toMatchObject({
      operation: { op: "subscription", unsubscribed: true, id: "a@b.co" },
    });
    expect(accepted({ type: "resubscribe", id: "u" })).toMatchObject({ operation: { unsubscribed: false } });
    expect(accepted({ type: "reidentify", id: "a", new_id: "b" })).toMatchObject({
      operation: { op: "reidentify", newKey: "i:b" },
    });
    expect(accepted({ type: "reidentify", id: "a", new_id: "a" })).toEqual({ queue: "none" });
    expect(accepted({ type: "delete", id: "u" })).toMatchObject({ operation: { op: "delete", key: "i:u" } });
  });

  it("is refused with the reason its single call's 400 gives", () => {
    expect(refusal({ type: "identify", data: {} })).toBe("id or email is required");
    expect(refusal({ type: "identify", id: "u", extras: { created_at: "yesterday" } })).toMatch(
      /^extras\.created_at must be an ISO 8601 date-time/,
    );
    expect(refusal({ type: "track", identity: {}, event_name: "x" })).toBe("identity.id or email is required");
    expect(refusal({ type: "edit", id: "u" })).toMatch(/^changes is required/);
    expect(refusal({ type: "tags", id: "u", add: [] })).toBe("add or remove must name at least one tag");
    expect(refusal({ type: "unsubscribe", email: "nope" })).toMatch(/^email must be an email address/);
    expect(refusal({ type: "reidentify", id: "a" })).toMatch(/^new_id is required/);
    expect(refusal({ type: "delete", id: 2 ** 60 })).toMatch(/^id must be sent as a string/);
    expect(refusal({ type: "identify", id: "u", data: { text: "\u0000" } })).toMatch(/U\+0000/);
  });

  it("is oversized past its single call's body limit, written as compact JSON", () => {
    const withPad = (bytes: number) => ({ type: "identify", id: "u", data: { pad: "p".repeat(bytes) } });
    const frame = JSON.stringify(withPad(0)).length;
    expect(isOversizedOperation(withPad(MAX_BODY_BYTES - frame))).toBe(false);
    expect(isOversizedOperation(withPad(MAX_BODY_BYTES - frame + 1))).toBe(true);
    // Bytes, not characters: "é" is two.
    expect(isOversizedOperation({ type: "identify", id: "u", data: { pad: "é".repeat(MAX_BODY_BYTES / 2) } })).toBe(
      true,
    );
  });

  it("is counted without being written, never smaller than its compact JSON", () => {
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: "binary", maxDepth: 2 }), (value) => {
        expect(compactJsonBytesAtMost(value)).toBeGreaterThanOrEqual(Buffer.byteLength(JSON.stringify(value)));
      }),
    );
    const escapes = ["\u0000", -2.2250738585072014e-308, false, { "\ud800": '\u001f"' }];
    expect(compactJsonBytesAtMost(escapes)).toBeGreaterThanOrEqual(Buffer.byteLength(JSON.stringify(escapes)));
  });

  it("names its type, and is a JSON object", () => {
    expect(refusal({ id: "u" })).toMatch(/^type is required and must be one of "identify", "track", "edit"/);
    expect(refusal({ type: "merge", id: "u" })).toMatch(/^type must be one of "identify"/);
    expect(refusal([{ type: "delete", id: "u" }])).toBe("an operation must be a JSON object");
    expect(refusal(null)).toBe("an operation must be a JSON object");
  });
});

describe("order within a batch", () => {
  const profile = (id: string, t = NOW): QueuedOperation => ({
    queue: "profile-operations",
    operation: { op: "delete", projectId: 1, key: `i:${id}`, id, t },
  });

  it("stamps a profile's k-th operation k ms after its first, the first a millisecond after the receive time", () => {
    const operations = [profile("a"), profile("b"), profile("a"), profile("a")];
    expect(stamps(operations)).toEqual([NOW + 1, NOW + 1, NOW + 2, NOW + 3]);
    expect(inBatchOrder(operations, NOW).lastStamp).toBe(NOW + 3);
  });

  it("keeps an earlier stamp of the operation's own, and orders events with the profile's operations", () => {
    const event = accepted({ type: "track", identity: { id: "a" }, event_name: "Paid" });
    const old = accepted({ type: "identify", id: "a", extras: { created_at: NOW / 1000 - 3600 } });
    const ahead = accepted({ type: "identify", id: "a", extras: { created_at: NOW / 1000 + 60 } });
    expect(stamps([old, ahead, event, profile("a")])).toEqual([NOW - 3_600_000, NOW + 2, NOW + 3, NOW + 4]);
    // Nothing stamped after the receive time: nothing to wait for.
    expect(inBatchOrder([old, old], NOW).lastStamp).toBe(NOW);
  });

  it("orders a reidentify with the operations of both its ids, and stamps nothing for one that does nothing", () => {
    const reidentify = accepted({ type: "reidentify", id: "a", new_id: "b" });
    expect(
      stamps([profile("a"), reidentify, profile("b"), accepted({ type: "reidentify", id: "c", new_id: "c" })]),
    ).toEqual([NOW + 1, NOW + 2, NOW + 3, null]);
  });
});
