import { describe, expect, it } from "vitest";
import { InvalidInput, MAX_FUTURE_SKEW_MS, parseTimestamp, profileIdOf, toIdentifyEvent } from "@cm/domain";

const NOW = Date.parse("2026-06-01T12:00:00Z");

describe("parseTimestamp", () => {
  it("reads ISO 8601 date-times with a zone and Unix seconds", () => {
    expect(parseTimestamp("2026-06-01T10:00:00Z")).toBe(Date.parse("2026-06-01T10:00:00Z"));
    expect(parseTimestamp("2026-06-01T12:00:00.250+02:00")).toBe(Date.parse("2026-06-01T10:00:00.250Z"));
    expect(parseTimestamp(1_780_000_000)).toBe(1_780_000_000_000);
    expect(parseTimestamp("1780000000.5")).toBe(1_780_000_000_500);
  });

  it("refuses what is not a timestamp", () => {
    for (const text of ["yesterday", "2026-06-01", "2026-13-45T00:00:00Z", "", "12abc"]) {
      expect(parseTimestamp(text), text).toBeNull();
    }
    expect(parseTimestamp(-5)).toBeNull();
  });

  it("refuses a day its month does not have, which Date.parse would move into the next month", () => {
    for (const text of [
      "2026-02-30T10:00:00Z",
      "2026-02-29T10:00:00Z",
      "2026-04-31T00:00:00Z",
      "1900-02-29T00:00:00Z",
    ]) {
      expect(parseTimestamp(text), text).toBeNull();
    }
    for (const text of ["2024-02-29T10:00:00Z", "2000-02-29T00:00:00Z", "2026-12-31T23:59:59Z", "2026-01-31 08:00Z"]) {
      expect(parseTimestamp(text), text).toBe(Date.parse(text.replace(" ", "T")));
    }
  });

  it("takes years 0001 to 9999 in UTC, and nothing Postgres or JavaScript would read back otherwise", () => {
    expect(parseTimestamp("0001-01-01T00:00:00Z")).toBe(Date.parse("0001-01-01T00:00:00Z"));
    expect(parseTimestamp("0030-06-01T00:00:00Z")).toBe(Date.parse("0030-06-01T00:00:00Z"));
    expect(parseTimestamp("9999-12-31T23:59:59.999Z")).toBe(Date.parse("9999-12-31T23:59:59.999Z"));
    expect(parseTimestamp("253402300799")).toBe(Date.parse("9999-12-31T23:59:59Z"));
    for (const value of [
      "0000-12-31T23:59:59Z",
      "0001-01-01T00:59:59+01:00",
      "9999-12-31T23:00:00-01:00",
      "253402300800",
    ]) {
      expect(parseTimestamp(value), value).toBeNull();
    }
    expect(parseTimestamp(253_402_300_800)).toBeNull();
  });
});

describe("toIdentifyEvent", () => {
  it("keys a profile by id, else by its email as the id, and stores id as text", () => {
    expect(toIdentifyEvent(1, { id: 42, email: "a@b.co" }, NOW)).toMatchObject({
      key: "i:42",
      id: "42",
      email: "a@b.co",
    });
    expect(toIdentifyEvent(1, { email: "a@b.co" }, NOW)).toMatchObject({ key: "i:a@b.co", id: "a@b.co" });
    expect(toIdentifyEvent(1, { id: null, email: "a@b.co" }, NOW)).toMatchObject({ key: "i:a@b.co", id: "a@b.co" });
    expect(() => toIdentifyEvent(1, { id: null }, NOW)).toThrow(/id or email/);
  });

  it("reads the shapes real clients send: one channel as an object, data null, phone_number", () => {
    const channel = { type: "push", address: "token-1", platform: "ios" };
    expect(toIdentifyEvent(1, { id: "u", channels: channel }, NOW).channels).toEqual([channel]);
    expect(toIdentifyEvent(1, { id: "u", channels: { type: "sms", address: "+15550100" } }, NOW).channels).toEqual([
      { type: "sms", address: "+15550100", platform: null },
    ]);
    expect(toIdentifyEvent(1, { id: "u", data: null, email: null, channels: null, extras: null }, NOW)).toEqual(
      toIdentifyEvent(1, { id: "u" }, NOW),
    );
    expect(toIdentifyEvent(1, { id: "u", phone_number: "+1 555 0100" }, NOW).phoneNumber).toBe("+1 555 0100");
  });

  it("names the profile of an event queued before migration 007 by its email", () => {
    expect(profileIdOf({ key: "e:a@b.co" })).toBe("a@b.co");
    expect(profileIdOf(toIdentifyEvent(1, { id: "u-1" }, NOW))).toBe("u-1");
  });

  it("orders by extras.created_at, or by the receive time", () => {
    expect(toIdentifyEvent(1, { id: "u" }, NOW).t).toBe(NOW);
    expect(toIdentifyEvent(1, { id: "u", extras: { created_at: "2026-06-01T11:00:00Z" } }, NOW).t).toBe(
      NOW - 3_600_000,
    );
  });

  it("refuses a created_at more than five minutes ahead, and stamps clock skew below that with the receive time", () => {
    const ahead = (ms: number) => new Date(NOW + ms).toISOString();
    expect(toIdentifyEvent(1, { id: "u", extras: { created_at: ahead(MAX_FUTURE_SKEW_MS) } }, NOW).t).toBe(NOW);
    expect(toIdentifyEvent(1, { id: "u", extras: { created_at: ahead(1) } }, NOW).t).toBe(NOW);
    expect(() =>
      toIdentifyEvent(1, { id: "u", extras: { created_at: ahead(MAX_FUTURE_SKEW_MS + 1000) } }, NOW),
    ).toThrow(InvalidInput);
  });

  it("needs an id or an email", () => {
    expect(() => toIdentifyEvent(1, { data: { a: 1 } }, NOW)).toThrow(/id or email/);
  });

  it("reads update_only as a string or a boolean", () => {
    expect(toIdentifyEvent(1, { id: "u", extras: { update_only: "true" } }, NOW).updateOnly).toBe(true);
    expect(toIdentifyEvent(1, { id: "u", extras: { update_only: true } }, NOW).updateOnly).toBe(true);
    expect(toIdentifyEvent(1, { id: "u", extras: { update_only: "false" } }, NOW).updateOnly).toBe(false);
  });
});
