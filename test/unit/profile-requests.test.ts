import { describe, expect, it } from "vitest";
import {
  InvalidInput,
  isKnownOperation,
  isLinkOperation,
  isStateOperation,
  parseEditRequest,
  parseReidentifyRequest,
  parseTagsRequest,
  parseUnsubscribeRequest,
  problemText,
  toDeleteOperation,
  toEditOperation,
  toReidentifyOperation,
  toSubscriptionOperation,
  toTagsOperation,
  type Parsed,
  type ProfileOperation,
} from "@cm/domain";

const NOW = Date.parse("2026-06-01T12:00:00Z");
const CONTEXT = { projectId: 1, receivedAt: NOW };

type Parse = (body: unknown, context: typeof CONTEXT) => Parsed<unknown>;

/** The reason a body is refused for (the single call's x-error-detail), or null when it is accepted. */
function refusal(parse: Parse, body: unknown): string | null {
  const parsed = parse(body, CONTEXT);
  return parsed.ok ? null : problemText(parsed.problems);
}

/** The operation an accepted body becomes. */
function accepted(parse: Parse, body: unknown): unknown {
  const parsed = parse(body, CONTEXT);
  if (!parsed.ok) throw new Error(problemText(parsed.problems));
  return parsed.value;
}

describe("the operations a request becomes", () => {
  it("names the user by id (a number as its text), else by email, stamped with the receive time", () => {
    expect(toSubscriptionOperation(1, { id: 42, email: "a@b.co" }, NOW, true)).toEqual({
      op: "subscription",
      projectId: 1,
      key: "i:42",
      id: "42",
      t: NOW,
      unsubscribed: true,
    });
    expect(toDeleteOperation(1, { id: null, email: "a@b.co" }, NOW)).toEqual({
      op: "delete",
      projectId: 1,
      key: "i:a@b.co",
      id: "a@b.co",
      t: NOW,
    });
    expect(() => toDeleteOperation(1, { id: null, email: null }, NOW)).toThrow(/id or email is required/);
    expect(() => toDeleteOperation(1, { id: 2 ** 60 }, NOW)).toThrow(/id must be sent as a string/);
  });

  it("edits data keys, null clearing one", () => {
    expect(toEditOperation(1, { id: "u", changes: { plan: "pro", trial: null } }, NOW)).toMatchObject({
      op: "edit",
      key: "i:u",
      changes: { plan: "pro", trial: null },
    });
  });

  it("trims tags, drops empty and repeated ones, and needs one left", () => {
    expect(toTagsOperation(1, { id: "u", add: [" vip", "vip", "", "beta "], remove: null }, NOW)).toMatchObject({
      op: "tags",
      add: ["vip", "beta"],
      remove: [],
    });
    expect(() => toTagsOperation(1, { id: "u", add: ["", "  "], remove: [] }, NOW)).toThrow(InvalidInput);
    expect(() => toTagsOperation(1, { id: "u" }, NOW)).toThrow(/add or remove must name at least one tag/);
  });

  it("reidentifies one id as another, both as text", () => {
    expect(toReidentifyOperation(1, { id: 1, new_id: 2 }, NOW)).toEqual({
      op: "reidentify",
      projectId: 1,
      key: "i:1",
      id: "1",
      t: NOW,
      newId: "2",
      newKey: "i:2",
    });
    expect(toReidentifyOperation(1, { id: 7, new_id: "7" }, NOW)).toBeNull();
    expect(() => toReidentifyOperation(1, { id: "a", new_id: 2 ** 60 }, NOW)).toThrow(
      /new_id must be sent as a string/,
    );
  });
});

describe("the kinds of operation a worker knows", () => {
  it("places each in one of state and link operations, and knows no other", () => {
    const on = { projectId: 1, key: "i:u", id: "u", t: NOW };
    const operations: ProfileOperation[] = [
      { ...on, updateOnly: false },
      { ...on, op: "identify", updateOnly: false },
      toEditOperation(1, { id: "u", changes: { plan: "pro" } }, NOW),
      toTagsOperation(1, { id: "u", add: ["vip"] }, NOW),
      toSubscriptionOperation(1, { id: "u" }, NOW, true),
      toDeleteOperation(1, { id: "u" }, NOW),
      toReidentifyOperation(1, { id: "u", new_id: "v" }, NOW)!,
    ];
    const placed = operations.map((operation) => ({
      known: isKnownOperation(operation),
      state: isStateOperation(operation),
      link: isLinkOperation(operation),
    }));
    const state = { known: true, state: true, link: false };
    const link = { known: true, state: false, link: true };
    expect(placed).toEqual([state, state, state, state, state, link, link]);
    for (const op of ["merge", "", 7, null]) expect(isKnownOperation({ ...on, op }), String(op)).toBe(false);
    expect(isKnownOperation({ ...on, op: "toString" })).toBe(false);
  });
});

describe("parsing the bodies real clients send", () => {
  it("reads tag lists sent as JSON text (n8n, forms), other text as one tag, and refuses JSON text that is no list", () => {
    expect(accepted(parseTagsRequest, { id: "123", add: '["a"," b"]', auth_token: "t" })).toMatchObject({
      add: ["a", "b"],
    });
    expect(accepted(parseTagsRequest, { id: "123", add: "[]", remove: '["prospect"]' })).toMatchObject({
      remove: ["prospect"],
    });
    expect(accepted(parseTagsRequest, { id: "u", add: "vip" })).toMatchObject({ add: ["vip"] });
    expect(refusal(parseTagsRequest, { id: "u", add: "[not json" })).toMatch(/^add must be/);
    expect(refusal(parseTagsRequest, { id: "u", add: "[1]" })).toMatch(/^add\[0\] must be a string/);
    expect(refusal(parseTagsRequest, { id: "u", add: ["x".repeat(256)] })).toMatch(/at most 255 characters/);
    expect(refusal(parseTagsRequest, { id: "u", add: Array.from({ length: 101 }, (_, n) => `t${n}`) })).toMatch(
      /at most 100 items/,
    );
    expect(refusal(parseTagsRequest, { id: "u", add: [" "] })).toBe("add or remove must name at least one tag");
  });

  it("reads PHP's empty changes list as no changes, and needs changes", () => {
    expect(accepted(parseEditRequest, { id: "1", changes: [] })).toEqual({
      op: "edit",
      projectId: 1,
      key: "i:1",
      id: "1",
      t: NOW,
      changes: {},
    });
    expect(accepted(parseEditRequest, { id: "1", changes: '{"plan":"pro"}' })).toMatchObject({
      changes: { plan: "pro" },
    });
    expect(refusal(parseEditRequest, { id: "1" })).toMatch(/^changes is required/);
    expect(refusal(parseEditRequest, { id: "1", changes: null })).toMatch(/^changes must be a JSON object/);
    expect(refusal(parseEditRequest, { id: "1", changes: ["a"] })).toMatch(/^changes must be a JSON object/);
  });

  it("takes null fields as not given and ignores unknown ones", () => {
    expect(accepted(parseUnsubscribeRequest, { id: null, email: "a@b.co", development_mode: false })).toMatchObject({
      op: "subscription",
      id: "a@b.co",
      unsubscribed: true,
    });
    expect(refusal(parseUnsubscribeRequest, { email: "not an email" })).toMatch(/^email must be an email address/);
    expect(refusal(parseUnsubscribeRequest, [])).toMatch(/^body must be a JSON object/);
    expect(refusal(parseUnsubscribeRequest, { id: null })).toBe("id or email is required");
  });

  it("needs both ids of a reidentify", () => {
    expect(accepted(parseReidentifyRequest, { id: "a", new_id: 2 })).toMatchObject({ id: "a", newId: "2" });
    expect(accepted(parseReidentifyRequest, { id: "a", new_id: "a" })).toBeNull();
    expect(refusal(parseReidentifyRequest, { id: "a" })).toMatch(/^new_id is required/);
    expect(refusal(parseReidentifyRequest, { id: "a", new_id: "" })).toMatch(/^new_id must be/);
    expect(refusal(parseReidentifyRequest, { id: "a", new_id: 2 ** 60 })).toMatch(/^new_id must be sent as a string/);
  });
});
