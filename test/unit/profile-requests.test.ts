import { describe, expect, it } from "vitest";
import {
  InvalidInput,
  toDeleteOperation,
  toEditOperation,
  toReidentifyOperation,
  toSubscriptionOperation,
  toTagsOperation,
} from "@cm/domain";
import { ApiError } from "../../apps/gateway/src/errors/api-error";
import {
  parseEditTagsBody,
  parseEditUserBody,
  parseReidentifyBody,
  parseUserRefBody,
} from "../../apps/gateway/src/validation";

const NOW = Date.parse("2026-06-01T12:00:00Z");

/** The x-error-detail a body gets, or null when it is accepted. */
function refusal(parse: (body: unknown) => unknown, body: unknown): string | null {
  try {
    parse(body);
    return null;
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return error.options.detail ?? "";
  }
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

describe("parsing the bodies real clients send", () => {
  it("reads tag lists sent as JSON text (n8n, forms), other text as one tag, and refuses JSON text that is no list", () => {
    expect(parseEditTagsBody({ id: "123", add: '["a"," b"]', auth_token: "t" })).toMatchObject({ add: ["a", " b"] });
    expect(parseEditTagsBody({ id: "123", add: "[]", remove: '["prospect"]' })).toMatchObject({
      remove: ["prospect"],
    });
    expect(parseEditTagsBody({ id: "u", add: "vip" })).toMatchObject({ add: ["vip"] });
    expect(refusal(parseEditTagsBody, { id: "u", add: "[not json" })).toMatch(/^add must be/);
    expect(refusal(parseEditTagsBody, { id: "u", add: "[1]" })).toMatch(/^add\[0\] must be a string/);
    expect(refusal(parseEditTagsBody, { id: "u", add: ["x".repeat(256)] })).toMatch(/at most 255 characters/);
    expect(refusal(parseEditTagsBody, { id: "u", add: Array.from({ length: 101 }, (_, n) => `t${n}`) })).toMatch(
      /at most 100 items/,
    );
  });

  it("reads PHP's empty changes list as no changes, and needs changes", () => {
    expect(parseEditUserBody({ id: "1", changes: [] })).toEqual({ id: "1", changes: {} });
    expect(refusal(parseEditUserBody, { id: "1" })).toMatch(/^changes is required/);
    expect(refusal(parseEditUserBody, { id: "1", changes: null })).toMatch(/^changes must be a JSON object/);
    expect(refusal(parseEditUserBody, { id: "1", changes: ["a"] })).toMatch(/^changes must be a JSON object/);
  });

  it("takes null fields as not given and ignores unknown ones", () => {
    expect(parseUserRefBody({ id: null, email: "a@b.co", development_mode: false })).toMatchObject({
      id: null,
      email: "a@b.co",
    });
    expect(refusal(parseUserRefBody, { email: "not an email" })).toMatch(/^email must be an email address/);
    expect(refusal(parseUserRefBody, [])).toMatch(/^body must be a JSON object/);
  });

  it("needs both ids of a reidentify", () => {
    expect(parseReidentifyBody({ id: "a", new_id: 2 })).toEqual({ id: "a", new_id: 2 });
    expect(refusal(parseReidentifyBody, { id: "a" })).toMatch(/^new_id is required/);
    expect(refusal(parseReidentifyBody, { id: "a", new_id: "" })).toMatch(/^new_id must be/);
  });
});
