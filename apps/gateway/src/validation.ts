import { describeTypiaErrors, jsonValueProblem, type IdentifyBody } from "@cm/domain";
import typia from "typia";
import { ApiError } from "./api-error";

const validateIdentifyBody = typia.createValidate<IdentifyBody>();

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
