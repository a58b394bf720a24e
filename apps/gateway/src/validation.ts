import { describeTypiaErrors, jsonValueProblems, problemText, type IdentifyBody } from "@cm/domain";
import typia from "typia";
import { ApiError } from "./api-error";

const validateIdentifyBody = typia.createValidate<IdentifyBody>();

export function parseIdentifyBody(body: unknown): IdentifyBody {
  const result = validateIdentifyBody(body);
  const problems = result.success ? jsonValueProblems(body) : describeTypiaErrors(result.errors);
  if (!result.success || problems.length > 0) throw ApiError.badRequest(problemText(problems));
  return result.data;
}
