import { describe, expect, it } from "vitest";
import { isDuplicateTopicName } from "@cm/db";

describe("isDuplicateTopicName", () => {
  it("knows the name index, and a Citus node's copy of it named with its shard id", () => {
    expect(isDuplicateTopicName({ code: "23505", constraint_name: "topics_project_name_key" })).toBe(true);
    expect(isDuplicateTopicName({ code: "23505", constraint_name: "topics_project_name_key_102010" })).toBe(true);
  });

  it("is not fooled by another constraint, another error or no error", () => {
    expect(isDuplicateTopicName({ code: "23505", constraint_name: "topics_pkey" })).toBe(false);
    expect(isDuplicateTopicName({ code: "23505", constraint_name: "topics_project_name_key_old" })).toBe(false);
    expect(isDuplicateTopicName({ code: "23503", constraint_name: "topics_project_name_key" })).toBe(false);
    expect(isDuplicateTopicName(undefined)).toBe(false);
  });
});
