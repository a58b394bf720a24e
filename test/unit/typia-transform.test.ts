import { describe, expect, it } from "vitest";
import { parseIdentifyRequest, problemText } from "@cm/domain";
import { loadConfig } from "@cm/config";

/** The reason an identify body is refused for, or null when it is accepted. */
function refusal(body: unknown): string | null {
  const parsed = parseIdentifyRequest(body, { projectId: 1, receivedAt: Date.now() });
  return parsed.ok ? null : problemText(parsed.problems);
}

// Without the typia transform, typia.createValidate() throws at the call site instead of
// returning a validator, so these tests fail when the build or the test runner lost it.
describe("typia transform", () => {
  it("rejects an identify body whose fields have the wrong types", () => {
    expect(refusal({ id: { nested: true }, email: "ada@example.com" })).toMatch(/^id /);
    expect(refusal({ id: "u1", channels: [{ type: "push" }] })).toMatch(/channels\[0\]\.address/);
    expect(refusal({ id: "u1", data: [1, 2] })).toMatch(/data/);
    expect(refusal({ id: "u1", preferences: { topics: [{ id: 1, status: "maybe" }] } })).toMatch(/status/);
  });

  it("accepts a well-formed identify body", () => {
    expect(refusal({ id: 7, email: "ada@example.com", data: { a: [1, { b: null }] } })).toBeNull();
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
