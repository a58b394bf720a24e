import {
  describeTypiaErrors,
  type IdentifyBody,
  type JourneyFile,
  type NewTopicBody,
  type TopicPatch,
} from "@cm/domain";
import typia, { type IValidation } from "typia";
import { describe, expect, it } from "vitest";

/** The validators the gateway and ctl use, on the domain's types. */
const validate = {
  identifyBody: typia.createValidate<IdentifyBody>(),
  topicPatch: typia.createValidateEquals<TopicPatch>(),
  newTopic: typia.createValidateEquals<NewTopicBody>(),
  journeyFile: typia.createValidate<JourneyFile>(),
};

function problems<T>(result: IValidation<T>, root?: string) {
  expect(result.success).toBe(false);
  return result.success ? [] : describeTypiaErrors(result.errors, root);
}

const messages = <T>(result: IValidation<T>, root?: string) => problems(result, root).map((p) => p.message);

describe("typia errors in plain words", () => {
  it("words the identify body's types, formats, bounds and unions", () => {
    expect(problems(validate.identifyBody({ email: "not-an-email" }))).toEqual([
      { path: "email", message: "email must be an email address" },
    ]);
    expect(messages(validate.identifyBody([1, 2]))).toEqual(["body must be a JSON object"]);
    expect(messages(validate.identifyBody({ id: { a: 1 } }))).toEqual([
      "id must be an integer, a string of 1 to 255 characters or null",
    ]);
    expect(messages(validate.identifyBody({ data: "plan=pro" }))).toEqual(["data must be a JSON object or null"]);
    expect(messages(validate.identifyBody({ channels: [{ type: "bad type", address: "x" }] }))).toContain(
      "channels[0].type must be a string matching the pattern ^[A-Za-z0-9_.-]{1,64}$",
    );
    expect(messages(validate.identifyBody({ preferences: { topics: [{ id: -1, status: "maybe" }] } }))).toEqual([
      "preferences.topics[0].id must be an integer of at least 0",
      'preferences.topics[0].status must be "subscribed" or "unsubscribed"',
    ]);
    expect(messages(validate.identifyBody({ extras: { update_only: "yes" } }))).toEqual([
      'extras.update_only must be one of "false", "true", true, false',
    ]);
  });

  it("names unknown and missing fields of a topic", () => {
    expect(problems(validate.topicPatch({ colour: "red", description: 5 }))).toEqual([
      { path: "description", message: "description must be a string or null" },
      { path: "colour", message: "colour is not a known field" },
    ]);
    expect(messages(validate.newTopic({}))).toEqual(["name is required and must be a string"]);
    expect(problems(validate.topicPatch("name"))).toEqual([{ path: "", message: "body must be a JSON object" }]);
  });

  it("words a journey file's integers, arrays and unions of objects, naming the file itself by root", () => {
    const file = {
      name: "J",
      status: "running",
      trigger: { type: "event", event_name: "x" },
      nodes: [{ id: 1.5, type: "enter" }, { id: 2, type: "webhook" }, "node"],
      edges: Array.from({ length: 5001 }, () => ({ from: 1, to: 2 })),
    };
    expect(messages(validate.journeyFile(file))).toEqual([
      'status must be one of "active", "archived", "cancelled", "draft", "paused"',
      "nodes[0].id must be an integer",
      "nodes[1] does not match any of the allowed object shapes",
      "nodes[2] must be a JSON object",
      "edges must be an array of at most 5000 items",
    ]);
    expect(messages(validate.journeyFile(null), "journey")).toEqual(["journey must be a JSON object"]);
  });

  it("falls back to a sentence, never type syntax, for a type it cannot word", () => {
    const error = { path: "$input.pair", expected: "[string, number]", value: [1] };
    expect(describeTypiaErrors([error])).toEqual([{ path: "pair", message: "pair has the wrong type" }]);
  });
});
