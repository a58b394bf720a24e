import {
  describeTypiaErrors,
  topicFieldProblems,
  topicPatchProblems,
  jsonValueProblem,
  type FieldProblem,
  type IdentifyBody,
  type NewTopicBody,
  type TopicPatch,
} from "@cm/domain";
import typia, { type IValidation } from "typia";
import { ApiError } from "./errors/api-error";

// Parsing request bodies into the types the use cases take, with typia. A body that is not
// its type is the client's error, named field by field.

const validateIdentifyBody = typia.createValidate<IdentifyBody>();
const validateTopicPatch = typia.createValidateEquals<TopicPatch>();
const validateNewTopic = typia.createValidateEquals<NewTopicBody>();

/** An identify body, or its 400 naming what is wrong. */
export function parseIdentifyBody(body: unknown): IdentifyBody {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw ApiError.badRequest("body is not a JSON object");
  }
  const result = validateIdentifyBody(body);
  if (!result.success) {
    throw ApiError.badRequest(
      describeTypiaErrors(result.errors)
        .map((e) => e.message)
        .join("; "),
    );
  }
  const problem = jsonValueProblem(body);
  if (problem !== null) throw ApiError.badRequest(problem);
  return result.data;
}

/** typia's errors as 422 entries, worded for a client rather than as TypeScript types. */
function typeProblems(errors: IValidation.IError[]): FieldProblem[] {
  return describeTypiaErrors(errors).map((problem, i) => {
    if (problem.path === "") return { path: "", message: "body must be a JSON object" };
    // validateEquals reports a property the type does not have as one expecting `undefined`.
    if (errors[i]?.expected === "undefined")
      return { path: problem.path, message: `${problem.path} is not a property of a topic` };
    return problem;
  });
}

/** Every problem of a topic body at once (422): wrong types, and the rules typia cannot express. */
function parseTopicBody<T>(
  body: unknown,
  validate: (input: unknown) => IValidation<T>,
  rules: (fields: object) => FieldProblem[],
): T {
  const input = body === "" ? {} : body; // a request without a body sends no fields
  const result = validate(input);
  const isObject = typeof input === "object" && input !== null && !Array.isArray(input);
  const problems = [...(result.success ? [] : typeProblems(result.errors)), ...(isObject ? rules(input) : [])];
  if (!result.success || problems.length > 0) throw ApiError.unprocessable(problems);
  return result.data;
}

export const parseTopicPatch = (body: unknown): TopicPatch =>
  parseTopicBody(body, validateTopicPatch, topicPatchProblems);

export const parseNewTopic = (body: unknown): NewTopicBody =>
  parseTopicBody(body, validateNewTopic, topicFieldProblems);
