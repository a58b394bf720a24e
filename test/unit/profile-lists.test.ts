import { describe, expect, it } from "vitest";
import {
  emailLookupForm,
  mergeStates,
  profileCursor,
  profileListRequest,
  profilePassesFilter,
  stateFromOperation,
  visibleProfile,
  type ProfileFilter,
} from "@cm/domain";

const KEY = "h:AAAAAAAAAAAAAAAAAAAAAA";
const noFilter: ProfileFilter = { email: null, tag: null, unsubscribed: null, updatedSince: null };

describe("profileListRequest", () => {
  it("reads every parameter, and defaults to a page of 25 without conditions", () => {
    expect(profileListRequest({})).toEqual({ ok: true, value: { limit: 25, afterKey: null, filter: noFilter } });
    expect(
      profileListRequest({
        limit: "100",
        cursor: profileCursor(KEY),
        email: "Ada@Example.COM",
        tag: "vip",
        unsubscribed: "false",
        updated_since: "1700000000",
      }),
    ).toEqual({
      ok: true,
      value: {
        limit: 100,
        afterKey: KEY,
        filter: { email: "ada@example.com", tag: "vip", unsubscribed: false, updatedSince: 1_700_000_000_000 },
      },
    });
  });

  it("names each bad parameter", () => {
    const parsed = profileListRequest({
      limit: "0",
      cursor: Buffer.from("journey:1").toString("base64url"),
      email: "x".repeat(255),
      tag: ["a", "b"],
      unsubscribed: "yes",
      updated_since: "yesterday",
    });
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? [] : parsed.problems.map((problem) => problem.path).sort()).toEqual([
      "query.cursor",
      "query.email",
      "query.limit",
      "query.tag",
      "query.unsubscribed",
      "query.updated_since",
    ]);
  });
});

describe("emailLookupForm", () => {
  it("lowers ASCII letters only, as Postgres's lower() under the C collation", () => {
    expect(emailLookupForm("Ada.Lovelace@EXAMPLE.com")).toBe("ada.lovelace@example.com");
    expect(emailLookupForm("ÉLODIE@Example.com")).toBe("Élodie@example.com");
  });
});

describe("profilePassesFilter", () => {
  const base = { projectId: 1, key: KEY, id: "u" };
  const state = [
    stateFromOperation({ ...base, op: "identify", t: 10, updateOnly: false, email: "Ada@Example.com" }),
    stateFromOperation({ ...base, op: "tags", t: 20, add: ["vip"], remove: [] }),
    stateFromOperation({ ...base, op: "tags", t: 30, add: [], remove: ["beta"] }),
  ].reduce(mergeStates);
  const profile = visibleProfile(state);

  it("reads every condition of the filter", () => {
    const cases: [Partial<ProfileFilter>, boolean][] = [
      [{}, true],
      [{ email: "ada@example.com" }, true],
      [{ email: "bob@example.com" }, false],
      [{ tag: "vip" }, true],
      [{ tag: "beta" }, false],
      [{ unsubscribed: false }, true],
      [{ unsubscribed: true }, false],
      [{ updatedSince: 1_000 }, true],
      [{ updatedSince: 2_001 }, false],
      [{ email: "ada@example.com", tag: "beta" }, false],
    ];
    expect(profile).not.toBeNull();
    for (const [condition, passes] of cases) {
      const filter = { ...noFilter, ...condition };
      expect(profilePassesFilter(profile!, 2_000, filter), JSON.stringify(condition)).toBe(passes);
    }
  });
});
