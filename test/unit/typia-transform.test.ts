import { describe, expect, it } from "vitest";
import { ApiError } from "../../apps/gateway/src/errors/api-error";
import { parseIdentifyBody } from "../../apps/gateway/src/validation";
import { loadConfig } from "@cm/config";

// Without the typia transform, typia.createValidate() throws at the call site instead of
// returning a validator, so these tests fail when the build or the test runner lost it.
describe("typia transform", () => {
  it("rejects an identify body whose fields have the wrong types", () => {
    expect(() => parseIdentifyBody({ id: { nested: true }, email: "ada@example.com" })).toThrow(ApiError);
    expect(() => parseIdentifyBody({ id: "u1", channels: [{ type: "push" }] })).toThrow(/channels\[0\]\.address/);
    expect(() => parseIdentifyBody({ id: "u1", data: [1, 2] })).toThrow(/data/);
    expect(() => parseIdentifyBody({ id: "u1", preferences: { topics: [{ id: 1, status: "maybe" }] } })).toThrow(
      /status/,
    );
  });

  it("accepts a well-formed identify body", () => {
    expect(parseIdentifyBody({ id: 7, email: "ada@example.com", data: { a: [1, { b: null }] } })).toMatchObject({
      id: 7,
    });
  });

  it("validates the configuration at start-up", () => {
    expect(() => loadConfig({ PORT: "seventy" })).toThrow(/port/);
    expect(loadConfig({}).port).toBe(3000);
    expect(loadConfig({}).retiredSettings).toEqual([]);
    expect(loadConfig({ DEAD_LETTER_RETENTION_DAYS: "30" }).retiredSettings).toEqual([
      expect.stringMatching(/^DEAD_LETTER_RETENTION_DAYS is no longer read: .*DEAD_LETTER_WARN_DAYS/),
    ]);
  });
});
