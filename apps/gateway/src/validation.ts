import {
  describeTypiaErrors,
  jsonValueProblems,
  problemText,
  topicFieldProblems,
  topicPatchProblems,
  type EditTagsBody,
  type EditUserBody,
  type IdentifyBody,
  type NewTopicBody,
  type Problem,
  type ReidentifyBody,
  type TopicPatch,
  type UserRefBody,
  valueFromJsonText,
} from "@cm/domain";
import typia, { type IValidation } from "typia";
import { ApiError } from "./errors/api-error";

// Parsing request bodies into the types the use cases take, with typia. A body that is not
// its type is the client's error, named field by field in plain words.

const validateIdentifyBody = typia.createValidate<IdentifyBody>();
const validateEditUserBody = typia.createValidate<EditUserBody>();
const validateEditTagsBody = typia.createValidate<EditTagsBody>();
const validateUserRefBody = typia.createValidate<UserRefBody>();
const validateReidentifyBody = typia.createValidate<ReidentifyBody>();
const validateTopicPatch = typia.createValidateEquals<TopicPatch>();
const validateNewTopic = typia.createValidateEquals<NewTopicBody>();

/** A body of Vero's users API, or its 400 naming what is wrong. */
function parseUsersApiBody<T>(body: unknown, validate: (input: unknown) => IValidation<T>): T {
  const result = validate(body);
  const problems = result.success ? jsonValueProblems(body) : describeTypiaErrors(result.errors);
  if (!result.success || problems.length > 0) throw ApiError.badRequest(problemText(problems));
  return result.data;
}

/** The fields of a JSON object body, or null for any other body (which validation refuses). */
function fieldsOf(body: unknown): Record<string, unknown> | null {
  return body !== null && typeof body === "object" && !Array.isArray(body) ? (body as Record<string, unknown>) : null;
}

/**
 * `data` (or `changes`) as JSON object text: form clients that cannot nest send it so
 * (`data={"age":20}`), and so does a Java client inside a JSON body.
 */
function withObjectFromText(body: unknown, name: "data" | "changes"): unknown {
  const fields = fieldsOf(body);
  return typeof fields?.[name] === "string" ? { ...fields, [name]: valueFromJsonText(fields[name], "{") } : body;
}

export const parseIdentifyBody = (body: unknown): IdentifyBody =>
  parseUsersApiBody(withObjectFromText(body, "data"), validateIdentifyBody);
export const parseUserRefBody = (body: unknown): UserRefBody => parseUsersApiBody(body, validateUserRefBody);
export const parseReidentifyBody = (body: unknown): ReidentifyBody => parseUsersApiBody(body, validateReidentifyBody);

/** PHP encodes an empty associative array as `[]`: vero-php's update() without changes sends `changes: []`. */
export function parseEditUserBody(input: unknown): EditUserBody {
  const body = withObjectFromText(input, "changes");
  const fields = fieldsOf(body);
  const emptyList = Array.isArray(fields?.changes) && fields.changes.length === 0;
  return parseUsersApiBody(emptyList ? { ...fields, changes: {} } : body, validateEditUserBody);
}

/**
 * A list sent as JSON text, as n8n sends tags (`"add": "[\"vip\"]"`) and form clients do; other
 * text is one tag (`"add": "vip"`).
 */
const listFromText = (value: unknown) =>
  typeof value === "string" && !value.trimStart().startsWith("[") ? [value] : valueFromJsonText(value, "[");

export function parseEditTagsBody(body: unknown): EditTagsBody {
  const fields = fieldsOf(body);
  const input =
    fields === null ? body : { ...fields, add: listFromText(fields.add), remove: listFromText(fields.remove) };
  return parseUsersApiBody(input, validateEditTagsBody);
}

/** Every problem of a topic body at once (422): wrong types, and the rules typia cannot express. */
function parseTopicBody<T>(
  body: unknown,
  validate: (input: unknown) => IValidation<T>,
  rules: (fields: object) => Problem[],
): T {
  const input = body === "" ? {} : body; // a request without a body sends no fields
  const result = validate(input);
  const isObject = typeof input === "object" && input !== null && !Array.isArray(input);
  const problems = [...(result.success ? [] : describeTypiaErrors(result.errors)), ...(isObject ? rules(input) : [])];
  if (!result.success || problems.length > 0) throw ApiError.unprocessable(problems);
  return result.data;
}

export const parseTopicPatch = (body: unknown): TopicPatch =>
  parseTopicBody(body, validateTopicPatch, topicPatchProblems);

export const parseNewTopic = (body: unknown): NewTopicBody =>
  parseTopicBody(body, validateNewTopic, topicFieldProblems);
