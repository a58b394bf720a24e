import { describe, expect, it } from "vitest";
import { isDuplicateTopicName } from "@cm/db";

describe("isDuplicateTopicName", () => {
  it("knows the name index, and a Citus node's copy of it named with its shard id", () => {
    expect(isDuplicateTopicName({ code: "23505", constraint_name: "topics_project_name_key" })).toBe(true);
    expect(isDuplicateTopicName({ code: "23505", constraint_name: "topics_project_name_key_102010" })).toBe(true);
  });

  it("knows it in the message when a Citus coordinator forwards a worker's error without the constraint", () => {
    // As Citus 13.2 forwards it from a worker's copy of the reference table `topics`.
    const forwarded = {
      code: "23505",
      message: 'duplicate key value violates unique constraint "topics_project_name_key_102008"',
      detail: "Key (project_id, lower(name))=(1, news) already exists.",
      where: "while executing command on 127.0.0.1:9701",
    };
    expect(isDuplicateTopicName(forwarded)).toBe(true);
    expect(
      isDuplicateTopicName({
        ...forwarded,
        message: "doppelter Schlüsselwert verletzt Unique-Constraint »topics_project_name_key_102008«",
      }),
    ).toBe(true);
    expect(
      isDuplicateTopicName({
        ...forwarded,
        message: 'duplicate key value violates unique constraint "topics_pkey_102008"',
      }),
    ).toBe(false);
    expect(
      isDuplicateTopicName({
        ...forwarded,
        message: 'duplicate key value violates unique constraint "topics_project_name_key_old"',
      }),
    ).toBe(false);
    // The detail quotes the client's name: a name that spells the index is no proof.
    expect(
      isDuplicateTopicName({
        ...forwarded,
        message: 'duplicate key value violates unique constraint "topics_pkey_102008"',
        detail: "Key (project_id, lower(name))=(1, topics_project_name_key) already exists.",
      }),
    ).toBe(false);
    expect(isDuplicateTopicName({ ...forwarded, code: "23503" })).toBe(false);
  });

  it("is not fooled by another constraint, another error or no error", () => {
    expect(isDuplicateTopicName({ code: "23505", constraint_name: "topics_pkey" })).toBe(false);
    expect(isDuplicateTopicName({ code: "23505", constraint_name: "topics_project_name_key_old" })).toBe(false);
    expect(isDuplicateTopicName({ code: "23503", constraint_name: "topics_project_name_key" })).toBe(false);
    expect(isDuplicateTopicName(undefined)).toBe(false);
  });
});
