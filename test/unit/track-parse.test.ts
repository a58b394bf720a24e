import { describe, expect, it } from "vitest";
import { canonicalJson, eventCursor, eventPageRequest, parseTrack, type TrackContext } from "@cm/domain";

const NOW = Date.parse("2026-06-01T12:00:00Z");
const context: TrackContext = { projectId: 1, receivedAt: NOW, eventId: "event-1", dedupWindowMs: 300_000 };

function parsed(body: unknown, over: Partial<TrackContext> = {}) {
  const result = parseTrack(body, { ...context, ...over });
  if (!result.ok) throw new Error(JSON.stringify(result.problems));
  return result.value;
}

describe("canonicalJson", () => {
  // Tie-breakers stored with every field are made of it: its text must never change.
  it("writes keys sorted at every depth, arrays in order, values as JSON writes them", () => {
    const value = { b: [{ d: 1, c: 'x"y' }, null, true], a: { z: -0, y: 1e21, x: "é\u2028" }, "10": 2, "2": 3 };
    expect(canonicalJson(value)).toBe(
      '{"10":2,"2":3,"a":{"x":"é\u2028","y":1e+21,"z":0},"b":[{"c":"x\\"y","d":1},null,true]}',
    );
    expect(canonicalJson({})).toBe("{}");
    expect(canonicalJson([])).toBe("[]");
    expect(canonicalJson("text")).toBe('"text"');
  });
});

describe("parseTrack", () => {
  const body = { identity: { id: "u-1", email: "u-1@example.com" }, event_name: "Added to Cart", data: { sku: "A-1" } };

  it("reads a body without text objects as sent, and the same body with them as JSON text alike", () => {
    const asText = {
      identity: JSON.stringify(body.identity),
      event_name: body.event_name,
      data: JSON.stringify(body.data),
      extras: JSON.stringify({ source: "n8n" }),
    };
    expect(parsed(asText)).toEqual({ ...parsed({ ...body, extras: { source: "n8n" } }) });
    expect(parsed(body)).toMatchObject({ key: "i:u-1", userId: "u-1", email: "u-1@example.com", data: { sku: "A-1" } });
    expect(body.identity).toEqual({ id: "u-1", email: "u-1@example.com" });
  });

  it("drops an empty email beside an id, and falls back to the top-level id and email", () => {
    const withEmpty = parsed({ ...body, identity: { id: "u-1", email: "" } });
    expect(withEmpty.userId).toBe("u-1");
    expect(withEmpty).not.toHaveProperty("email");
    expect(parsed({ id: "u-2", event_name: "Signed up" })).toMatchObject({ userId: "u-2" });
    expect(parsed({ ...body, email: "stray@example.com" })).toMatchObject({ email: "u-1@example.com" });
  });

  it("gives events of equal data (in any key order) and normalised name one dedup key, and others another", () => {
    const a = parsed({ ...body, data: { sku: "A-1", qty: 2 } });
    const b = parsed({ ...body, event_name: "added_to-cart", data: { qty: 2, sku: "A-1" } });
    const c = parsed({ ...body, data: { sku: "A-1", qty: 3 } });
    expect(a.dedupKey).toBe(b.dedupKey);
    expect(c.dedupKey).not.toBe(a.dedupKey);
    // Keys claimed in event_keys and queued by gateways of the previous release must equal the
    // ones made now: the text of a key never changes.
    expect(a.dedupKey).toBe("m-4npBndq9z_DAnd1ha1HiGZa2TE7veyFl4DXLXYraQ");
    expect(parsed(body, { dedupWindowMs: 0 })).not.toHaveProperty("dedupKey");
  });

  it("gives a message id that is a UUID one dedup key in any case, as it names one event id", () => {
    const id = "AAAAAAAA-BBBB-4CCC-8DDD-000000014510";
    const upper = parsed({ ...body, extras: { message_id: id } });
    const lower = parsed({ ...body, extras: { message_id: id.toLowerCase() } });
    expect(upper.dedupKey).toBe(lower.dedupKey);
    expect(parsed({ ...body, extras: { message_id: "Order-1" } }).dedupKey).not.toBe(
      parsed({ ...body, extras: { message_id: "order-1" } }).dedupKey,
    );
  });
});

describe("eventPageRequest", () => {
  it("reads back the cursor of an event of any year the API takes, before 1970 too", () => {
    const id = "0b7e3f5a-1d2c-4e5f-8a9b-0c1d2e3f4a5b";
    for (const t of [Date.parse("0001-01-01T00:00:00Z"), Date.parse("1969-12-31T23:59:59.999Z"), 0, NOW]) {
      expect(eventPageRequest({ cursor: eventCursor(t, id) })).toMatchObject({ ok: true, value: { after: { t, id } } });
    }
  });

  it("refuses a cursor of a time Postgres cannot hold", () => {
    const id = "0b7e3f5a-1d2c-4e5f-8a9b-0c1d2e3f4a5b";
    expect(eventPageRequest({ cursor: eventCursor(-999_999_999_999_999, id) })).toMatchObject({ ok: false });
  });

  it("refuses query text Postgres cannot hold and times outside years 0001 to 9999", () => {
    for (const query of [{ event_name: "a\u0000b" }, { event_name: "a\ud800" }, { since: "0000-01-01T00:00:00Z" }]) {
      expect(eventPageRequest(query), JSON.stringify(query)).toMatchObject({ ok: false });
    }
  });
});
