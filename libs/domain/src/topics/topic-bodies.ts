import typia, { type IValidation } from "typia";
import { InvalidInput, type Problem } from "../kernel/problems";
import { describeTypiaErrors } from "../kernel/validation-problems";
import { topicFieldProblems, topicPatchProblems, type NewTopicBody, type TopicPatch } from "./topic";

// Reading topic bodies into the types the use cases take, with typia. A body that is not its
// type is the sender's error, named field by field in plain words (InvalidInput).

const validateTopicPatch = typia.createValidateEquals<TopicPatch>();
const validateNewTopic = typia.createValidateEquals<NewTopicBody>();

/** Every problem of a topic body at once: wrong types, and the rules typia cannot express. */
function parseTopicBody<T>(
  body: unknown,
  validate: (input: unknown) => IValidation<T>,
  rules: (fields: object) => Problem[],
): T {
  const input = body === "" ? {} : body; // a request without a body sends no fields
  const result = validate(input);
  const isObject = typeof input === "object" && input !== null && !Array.isArray(input);
  const problems = [...(result.success ? [] : describeTypiaErrors(result.errors)), ...(isObject ? rules(input) : [])];
  if (!result.success || problems.length > 0) throw new InvalidInput(problems);
  return result.data;
}

export const parseTopicPatch = (body: unknown): TopicPatch =>
  parseTopicBody(body, validateTopicPatch, topicPatchProblems);

export const parseNewTopic = (body: unknown): NewTopicBody =>
  parseTopicBody(body, validateNewTopic, topicFieldProblems);
