import { describe, expect, it } from "vitest";
import { idCursor, idPageRequest, ID_PAGE_DEFAULT } from "@cm/domain";

describe("idPageRequest", () => {
  it("reads a limit and a cursor of the same list, with defaults", () => {
    expect(idPageRequest("topics", {})).toEqual({ ok: true, page: { limit: ID_PAGE_DEFAULT, afterId: 0 } });
    expect(idPageRequest("topics", { limit: "5", cursor: idCursor("topics", 42) })).toEqual({
      ok: true,
      page: { limit: 5, afterId: 42 },
    });
  });

  it("names each parameter it cannot read: out of range, another list's cursor, given twice", () => {
    const problems = (query: Record<string, string | string[]>) => {
      const read = idPageRequest("topics", query);
      return read.ok ? [] : read.problems.map((problem) => problem.message);
    };
    expect(problems({ limit: "0" })).toEqual(["limit must be an integer from 1 to 100"]);
    expect(problems({ limit: "101", cursor: idCursor("journeys", 1) })).toEqual([
      "limit must be an integer from 1 to 100",
      "cursor must be a next_cursor from a previous page",
    ]);
    expect(problems({ limit: ["5", "6"] })).toEqual(["limit must be given once"]);
  });
});
