import { describe, expect, it } from "vitest";
import {
  applyTopicPatch,
  idFromPath,
  InvalidInput,
  newTopicValues,
  parseNewTopic,
  parseTopicPatch,
  sameTopicValues,
  topicCursor,
  topicDescriptionProblems,
  topicFieldProblems,
  topicNameProblems,
  topicPageRequest,
  topicPatchProblems,
  topicResource,
  type TopicValues,
} from "@cm/domain";

const current: TopicValues = { name: "News", description: "Monthly", default_status: "subscribed" };

describe("topic names and descriptions", () => {
  it("checks the name as saved: trimmed, 1 to 255 characters", () => {
    expect(topicNameProblems("  News  ")).toEqual([]);
    expect(topicNameProblems("   ")).toEqual([{ path: "name", message: "name must not be empty" }]);
    expect(topicNameProblems("x".repeat(255))).toEqual([]);
    expect(topicNameProblems(` ${"x".repeat(255)} `)).toEqual([]);
    expect(topicNameProblems("x".repeat(256))).toEqual([
      { path: "name", message: "name must be at most 255 characters" },
    ]);
  });

  it("counts characters, not UTF-16 units, as Postgres does", () => {
    expect(topicNameProblems("😀".repeat(255))).toEqual([]);
    expect(topicNameProblems("😀".repeat(256))).toHaveLength(1);
    expect(topicDescriptionProblems("😀".repeat(200))).toEqual([]);
    expect(topicDescriptionProblems("😀".repeat(201))).toHaveLength(1);
  });

  it("allows a description of at most 200 characters, or null", () => {
    expect(topicDescriptionProblems(null)).toEqual([]);
    expect(topicDescriptionProblems("d".repeat(200))).toEqual([]);
    expect(topicDescriptionProblems("d".repeat(201))).toEqual([
      { path: "description", message: "description must be at most 200 characters" },
    ]);
  });

  it("refuses U+0000 and lone surrogates, which Postgres text cannot hold", () => {
    expect(topicNameProblems("a\u0000b")).toHaveLength(1);
    expect(topicDescriptionProblems("a\u0000b")).toHaveLength(1);
    expect(topicNameProblems("a\ud800b")).toEqual([
      { path: "name", message: "name must not contain a lone UTF-16 surrogate" },
    ]);
    expect(topicDescriptionProblems("\udfffb")).toEqual([
      { path: "description", message: "description must not contain a lone UTF-16 surrogate" },
    ]);
  });
});

describe("topic body rules", () => {
  it("names every problem with its path, and leaves wrongly typed fields to typia", () => {
    expect(topicFieldProblems({ name: " ", description: "d".repeat(201) })).toEqual([
      { path: "name", message: "name must not be empty" },
      { path: "description", message: "description must be at most 200 characters" },
    ]);
    expect(topicFieldProblems({ name: 5, description: null })).toEqual([]);
  });

  it("refuses an empty patch (rule 5)", () => {
    expect(topicPatchProblems({})).toEqual([{ path: "", message: expect.stringContaining("at least one") }]);
    expect(topicPatchProblems({ default_status: "subscribed" })).toEqual([]);
  });
});

describe("reading topic bodies", () => {
  const problemsOf = (parse: () => unknown) => {
    try {
      parse();
    } catch (error) {
      if (error instanceof InvalidInput) return error.problems.map((problem) => problem.path);
      throw error;
    }
    throw new Error("the body was read");
  };

  it("gives the body as its type", () => {
    const body = { name: " News ", default_status: "unsubscribed" };
    expect(parseNewTopic(body)).toEqual(body);
    expect(parseTopicPatch({ description: null })).toEqual({ description: null });
  });

  it("names the wrong types and the broken rules at once", () => {
    expect(problemsOf(() => parseNewTopic({ name: " ", default_status: "maybe" })).sort()).toEqual([
      "default_status",
      "name",
    ]);
    expect(problemsOf(() => parseNewTopic({ name: "News", colour: "red" }))).toEqual(["colour"]);
  });

  it("reads a request without a body as one without fields", () => {
    expect(problemsOf(() => parseTopicPatch(""))).toEqual([""]);
    expect(problemsOf(() => parseNewTopic(""))).toEqual(["name"]);
  });
});

describe("a new topic's values", () => {
  it("are the body's, the name trimmed, and the defaults of those it leaves out", () => {
    expect(newTopicValues({ name: "  News " })).toEqual({
      name: "News",
      description: null,
      default_status: "subscribed",
    });
    expect(newTopicValues({ name: "News", description: "Monthly", default_status: "unsubscribed" })).toEqual({
      name: "News",
      description: "Monthly",
      default_status: "unsubscribed",
    });
  });
});

describe("applying a patch", () => {
  it("leaves omitted fields unchanged (rule 1)", () => {
    expect(applyTopicPatch(current, { default_status: "unsubscribed" })).toEqual({
      ...current,
      default_status: "unsubscribed",
    });
  });

  it("clears the description when it is null (rule 2)", () => {
    expect(applyTopicPatch(current, { description: null })).toEqual({ ...current, description: null });
  });

  it("saves the name trimmed", () => {
    expect(applyTopicPatch(current, { name: "  Weekly  " }).name).toBe("Weekly");
  });

  it("tells a patch that changes nothing", () => {
    expect(sameTopicValues(current, applyTopicPatch(current, { name: " News ", description: "Monthly" }))).toBe(true);
    expect(sameTopicValues(current, applyTopicPatch(current, { name: "news" }))).toBe(false);
  });
});

describe("the Topic resource", () => {
  const record = { id: 1, ...current, created_at: new Date(0), updated_at: new Date(1) };

  it("omits a blank or null description", () => {
    expect(topicResource({ ...record, description: null })).not.toHaveProperty("description");
    expect(topicResource({ ...record, description: "  " })).not.toHaveProperty("description");
    expect(topicResource(record)).toMatchObject({ description: "Monthly", created_at: "1970-01-01T00:00:00.000Z" });
  });

  it("shows the values in the order of the document's Topic schema, and nothing else of a row", () => {
    expect(Object.keys(topicResource({ ...record, project_id: 7 } as typeof record))).toEqual([
      "id",
      "name",
      "description",
      "default_status",
      "created_at",
      "updated_at",
    ]);
  });
});

describe("resource ids in paths", () => {
  it("accepts positive Postgres integers only", () => {
    expect(idFromPath("42")).toBe(42);
    expect(idFromPath("2147483647")).toBe(2_147_483_647);
    for (const segment of ["0", "-1", "1.5", "abc", "1e3", "007", "2147483648", "99999999999", "", undefined]) {
      expect(idFromPath(segment), segment).toBeNull();
    }
  });
});

describe("topic list pages", () => {
  it("defaults to 25 from the start", () => {
    expect(topicPageRequest({})).toEqual({ ok: true, page: { limit: 25, afterId: 0 } });
  });

  it("accepts a limit from 1 to 100 and a cursor it issued", () => {
    expect(topicPageRequest({ limit: "100", cursor: topicCursor(17) })).toEqual({
      ok: true,
      page: { limit: 100, afterId: 17 },
    });
    expect(topicPageRequest({ limit: "1" })).toMatchObject({ ok: true, page: { limit: 1 } });
  });

  it("refuses any other limit or cursor, naming each", () => {
    for (const limit of ["0", "101", "abc", "1.5", "", " 5", ["1", "2"]]) {
      expect(topicPageRequest({ limit }), String(limit)).toEqual({
        ok: false,
        problems: [{ path: "query.limit", message: expect.any(String) }],
      });
    }
    for (const cursor of ["", "17", "garbage!", Buffer.from("topic:x").toString("base64url"), `${topicCursor(17)}=`]) {
      expect(topicPageRequest({ cursor }), cursor).toMatchObject({ ok: false, problems: [{ path: "query.cursor" }] });
    }
    expect(topicPageRequest({ limit: "0", cursor: "bad" })).toMatchObject({ ok: false, problems: [{}, {}] });
  });
});
