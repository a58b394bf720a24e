import { isUnavailable } from "@cm/db";
import { InvalidInput } from "@cm/domain";
import { isRedisOutOfMemory } from "@cm/queue";
import { CredentialLookupsThrottled } from "../auth/credential-cache";
import { QueueWritesBackedUp } from "../micro-batcher";
import {
  DuplicateTopicName,
  IdempotencyKeyInFlight,
  IdempotencyKeyReused,
  NotFound,
  QueueUnavailable,
} from "../use-cases/errors";
import { ApiError } from "./api-error";

const BODY_FAILURES: Record<number, string> = {
  413: "body is larger than 256 KiB",
  415: "the body's Content-Encoding is not gzip, deflate, br or identity",
};

/** The HTTP answer for whatever a route threw: its own ApiError, a named domain error, or a failure. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof NotFound) return ApiError.notFound();
  if (error instanceof InvalidInput) return ApiError.unprocessable(error.problems);
  if (error instanceof DuplicateTopicName) return ApiError.conflict(error.message);
  if (error instanceof IdempotencyKeyInFlight)
    return new ApiError(409, { detail: error.message, problems: [{ message: error.message }], retryAfterSeconds: 1 });
  if (error instanceof IdempotencyKeyReused) return ApiError.unprocessable([{ message: error.message }]);
  // A full Redis frees up as workers drain it, a backed-up one catches up, a flood of unknown
  // tokens passes: the client should come back, not give up.
  if (error instanceof QueueUnavailable || error instanceof QueueWritesBackedUp) return ApiError.unavailable();
  if (isUnavailable(error) || isRedisOutOfMemory(error)) return ApiError.unavailable();
  if (error instanceof CredentialLookupsThrottled) return ApiError.overloaded(error.message);
  return bodyReadError(error) ?? new ApiError(500);
}

/**
 * Errors thrown by Koa's own helpers (body limits, bad JSON, unknown encodings) carry an HTTP
 * status; zlib's (a body that is not the gzip or deflate it says it is) carry a Z_ code, and
 * brotli's an ERR__ one (ERR__ERROR_FORMAT_PADDING_2 for text that is no brotli).
 */
function bodyReadError(error: unknown): ApiError | null {
  const { status, code } = (error ?? {}) as { status?: unknown; code?: unknown };
  if (typeof status === "number" && status >= 400 && status < 500) {
    const detail = BODY_FAILURES[status] ?? "body is not valid JSON";
    return new ApiError(status, { detail, problems: [{ message: detail }] });
  }
  if (typeof code === "string" && /^(Z_|ERR__)/.test(code)) {
    return ApiError.badRequest("body is not valid for its Content-Encoding");
  }
  return null;
}
