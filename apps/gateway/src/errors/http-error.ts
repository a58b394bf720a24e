import { ApiError, type ProblemEntry } from "./api-error";
import { errorKind } from "./error-kind";

const BODY_FAILURES: Record<number, string> = {
  413: "body is larger than 256 KiB",
  415: "the body's Content-Encoding is not gzip, deflate, br or identity",
};

/** What a named error offers its answer: its message, and the problems of invalid input. */
type NamedError = { message: string; problems?: ProblemEntry[] };

/** The answer to each kind of named error (errors/error-kind.ts): the one table from what went wrong to a status. */
const ANSWERS: Record<string, (error: NamedError) => ApiError> = {
  not_found: () => ApiError.notFound(),
  invalid_input: (error) => ApiError.unprocessable(error.problems ?? [{ message: error.message }]),
  duplicate_topic_name: (error) => ApiError.conflict(error.message),
  permissions_not_held: (error) => new ApiError(403, { problems: [{ path: "permissions", message: error.message }] }),
  key_being_rotated_out: (error) => new ApiError(403, { problems: [{ message: error.message }] }),
  webhook_not_parked: (error) => ApiError.conflict(error.message),
  invalid_cursor: (error) => ApiError.invalidQuery([{ path: "query.after", message: error.message }]),
  changes_trimmed: (error) => new ApiError(410, { problems: [{ path: "query.after", message: error.message }] }),
  idempotency_key_in_flight: (error) =>
    new ApiError(409, { detail: error.message, problems: [{ message: error.message }], retryAfterSeconds: 1 }),
  idempotency_key_reused: (error) => ApiError.unprocessable([{ message: error.message }]),
  // A full Redis frees up as workers drain it, a backed-up one catches up, a flood of unknown
  // tokens passes: the client should come back, not give up.
  queue_unavailable: () => ApiError.unavailable(),
  queue_backed_up: () => ApiError.unavailable(),
  // Redis did not answer a write in time: it may still land, but it is not promised.
  queue_write_timed_out: () => ApiError.unavailable(),
  // Too few Redis replicas confirmed the job in time (REDIS_REPLICAS_ACK): a failover is under way
  // or a replica is behind. It is on the primary and may still be applied, but it is not promised.
  replicas_behind: () => ApiError.unavailable(),
  store_unavailable: () => ApiError.unavailable(),
  overloaded: (error) => ApiError.overloaded(error.message),
};

/** The HTTP answer for whatever a route threw: its own ApiError, a named error by its kind, or a failure. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const kind = errorKind(error);
  if (kind !== undefined && Object.hasOwn(ANSWERS, kind)) {
    return (ANSWERS[kind] as (error: NamedError) => ApiError)(error as NamedError);
  }
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
