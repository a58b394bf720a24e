import { describe, expect, it } from "vitest";
import { scanJson } from "../../apps/gateway/src/body/json-scan";

/** The objects and arrays of a parsed value, and how deep they nest: what the scan must find. */
function shapeOf(value: unknown): { objects: number; depth: number } {
  if (value === null || typeof value !== "object") return { objects: 0, depth: 0 };
  const inner = Object.values(value).map(shapeOf);
  return {
    objects: 1 + inner.reduce((sum, shape) => sum + shape.objects, 0),
    depth: 1 + Math.max(0, ...inner.map((shape) => shape.depth)),
  };
}

const TRICKY_TEXT = ['[{"', "}]", 'a\\"b', "\\\\", "\\", '"', "\u2028", "😀", "\\u005b", ""];

describe("scanJson", () => {
  it("counts the objects and arrays JSON.parse builds, and their depth, whatever their strings hold", () => {
    const values: unknown[] = [
      {},
      [],
      "text",
      12,
      null,
      { a: [1, { b: [] }], c: {} },
      Object.fromEntries(TRICKY_TEXT.map((text, n) => [text, n % 2 ? [text, { [text]: text }] : text])),
      { batch: Array.from({ length: 50 }, (_, n) => ({ type: "identify", id: `u-${n}`, data: { list: [[n]] } })) },
    ];
    for (const value of values) {
      for (const text of [JSON.stringify(value), JSON.stringify(value, null, 2)]) {
        const { objects, depth } = scanJson(text);
        expect({ objects, depth }).toEqual(shapeOf(JSON.parse(text)));
      }
    }
  });

  it("ends a string at a line break, so that what follows on the next NDJSON line counts", () => {
    // The first line is not JSON; the second is parsed on its own (its depth counts on from the
    // first's unclosed object: more than parsing meets, never less).
    const { objects, depth } = scanJson('{"a":"open\n[[[{}]]]');
    expect(objects).toBe(5);
    expect(depth).toBeGreaterThanOrEqual(4);
  });

  it("finds nesting far deeper than the stack allows to walk, in one pass", () => {
    const levels = 1_000_000;
    expect(scanJson(`{"batch":${"[".repeat(levels)}${"]".repeat(levels)}}`)).toMatchObject({
      objects: levels + 1,
      depth: levels + 1,
    });
  });

  it("reads every value the top-level object gives the fields asked for, in order, and none deeper", () => {
    const fields = ["auth_token", "tracking_api_key"];
    const text =
      '{"auth_token" : "first", "data": {"auth_token": "nested"}, "list": [{"auth_token": "in a list"}],' +
      ' "tracking_api_key":"second", "auth\\u005ftoken": "escaped", "auth_token": 7, "note": "auth_token"}';
    expect(scanJson(text, fields).values).toEqual(["first", "second", "escaped", 7]);
    expect(scanJson('{"auth_token": {"a": [1, 2]}}', fields).values).toEqual([{ a: [1, 2] }]);
    expect(scanJson('[{"auth_token": "x"}]', fields).values).toEqual([]);
    expect(scanJson('{"id": "u"}', fields).values).toEqual([]);
  });
});
