import { describe, expect, it } from "vitest";
import { feedChange } from "@cm/domain";

// A profile's change as the capture stores it (libs/db/functions/change_feed.sql), stamped, and
// as the feed serves it (docs/changes.md, "Types"). test/db/change-feed.test.ts reads the same
// through the capture itself.

const push = { type: "push", address: "d-1", platform: "ios" };
const mail = { type: "email", address: "ada@example.com", platform: null };

describe("feedChange", () => {
  it("shows a new profile's values seen since its creation, without those cleared, in the feed's key order", () => {
    const stored = {
      since: 100,
      email: { t: 100, v: "ada@example.com" },
      phone_number: { t: 100, v: "+100" },
      data: {
        plan: { t: 100, v: "pro" },
        seats: { t: 120, h: "#hash", v: { max: 5 } },
        early: { t: 99, v: "stamped before the profile was created" },
        gone: { t: 110, v: null },
        unset: { t: 110 },
      },
      channels: { "push:d-1": { t: 100, h: "h", v: push }, "email:ada@example.com": { t: 50, h: "h", v: mail } },
    };
    expect(JSON.stringify(feedChange("profile.created", stored))).toBe(
      JSON.stringify({
        data: { plan: "pro", seats: { max: 5 } },
        email: "ada@example.com",
        channels: [push],
        phone_number: "+100",
      }),
    );
  });

  it("shows a changed profile's values as the capture found them changed, a cleared key as null", () => {
    const stored = {
      since: 100,
      email: { t: 300, v: null },
      phone_number: null,
      data: { plan: { t: 300, v: "team" }, seats: { t: 300, v: null } },
      channels: { "push:d-1": { t: 300, h: "h", v: push } },
    };
    expect(feedChange("profile.changed", stored)).toEqual({
      data: { plan: "team", seats: null },
      email: null,
      channels: [push],
    });
  });

  it("leaves out a field without a change, and a map of which nothing is seen", () => {
    const stored = {
      since: 100,
      email: { t: 100, v: null },
      phone_number: null,
      data: { plan: { t: 10, v: "free" }, gone: { t: 120, v: null } },
      channels: null,
    };
    expect(JSON.stringify(feedChange("profile.created", stored))).toBe('{"email":null}');
    expect(
      feedChange("profile.changed", { since: 100, email: null, phone_number: null, data: null, channels: null }),
    ).toEqual({});
  });

  it("keeps a data key named like a member of Object.prototype as a key", () => {
    const data = JSON.parse('{"__proto__": {"t": 1, "v": "x"}, "constructor": {"t": 1, "v": "y"}}') as object;
    const change = feedChange("profile.created", { since: 1, email: null, phone_number: null, data, channels: null });
    expect(JSON.stringify(change)).toBe('{"data":{"__proto__":"x","constructor":"y"}}');
  });

  it("serves every other change, and a profile's change stored without stamps, as it is stored", () => {
    const tags = { added: ["vip"], removed: [] };
    expect(feedChange("tags.changed", tags)).toBe(tags);
    const unstamped = { data: { plan: "pro" }, email: "ada@example.com" };
    expect(feedChange("profile.created", unstamped)).toBe(unstamped);
  });
});
