import { nestedDeeperThan } from "@cm/domain";
import { describe, expect, it } from "vitest";

/** `levels` objects and arrays, alternating, each inside the one before. */
function nested(levels: number): unknown {
  let value: unknown = "leaf";
  for (let level = 0; level < levels; level++) value = level % 2 ? [1, value] : { a: 1, b: value };
  return value;
}

describe("nestedDeeperThan", () => {
  it("counts each object and array as a level, and nothing else", () => {
    for (const levels of [0, 1, 2, 31, 32, 33, 40]) {
      for (const limit of [0, 1, 32, 40]) expect(nestedDeeperThan(nested(levels), limit)).toBe(levels > limit);
    }
    expect(nestedDeeperThan("text", 0)).toBe(false);
    expect(nestedDeeperThan(null, 0)).toBe(false);
    expect(nestedDeeperThan({ a: [], b: {}, c: [1, "x", null] }, 1)).toBe(true);
    expect(nestedDeeperThan({ a: [], b: {}, c: [1, "x", null] }, 2)).toBe(false);
  });

  it("finds a nesting of 100,000 levels without overflowing the stack", () => {
    expect(nestedDeeperThan(nested(100_000), 40)).toBe(true);
    expect(nestedDeeperThan(JSON.parse(`${"[".repeat(100_000)}${"]".repeat(100_000)}`), 40)).toBe(true);
  });

  it("reads an own key named __proto__, as JSON.parse makes it", () => {
    expect(nestedDeeperThan(JSON.parse('{"__proto__": [[[1]]]}'), 3)).toBe(true);
    expect(nestedDeeperThan(JSON.parse('{"__proto__": [[[1]]]}'), 4)).toBe(false);
  });
});
