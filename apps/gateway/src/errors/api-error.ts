import { problemText, type Problem } from "@cm/domain";

/** A problem of a `{errors:[…]}` body; one about the request as a whole names no path. */
export type ProblemEntry = Pick<Problem, "message"> & Partial<Pick<Problem, "path">>;

/**
 * An HTTP answer other than success. `code` is the `{error}` text of key-authenticated routes;
 * `problems` fills `{errors:[...]}` bodies; `detail` explains a 400 to identify callers.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly options: {
      code?: string;
      problems?: ProblemEntry[];
      detail?: string;
      retryAfterSeconds?: number;
      /** Turned away by design, to stay within a bound: logged as a rejection, not as a failure. */
      shed?: boolean;
    } = {},
  ) {
    super(options.detail ?? options.problems?.map((p) => p.message).join("; ") ?? options.code ?? `HTTP ${status}`);
  }

  static unauthorized(): ApiError {
    return new ApiError(401, { code: "unauthorized" });
  }

  static forbidden(): ApiError {
    return new ApiError(403, { code: "forbidden" });
  }

  static notFound(): ApiError {
    return new ApiError(404, { code: "not_found" });
  }

  static methodNotAllowed(): ApiError {
    return new ApiError(405, { code: "method_not_allowed" });
  }

  /** The credential or data store cannot be reached; clients should retry in a few seconds. */
  static unavailable(): ApiError {
    return new ApiError(503, { code: "unavailable", retryAfterSeconds: 5 });
  }

  /**
   * The gateway is at one of its bounds (bodies in flight, unverified bytes, unknown-token
   * lookups) and turns the request away; `reason` says which, in its log. Clients should retry.
   */
  static overloaded(reason: string): ApiError {
    return new ApiError(503, { code: "unavailable", detail: reason, retryAfterSeconds: 1, shed: true });
  }

  /** The project sent more than its rate limit allows; it may send again in that many seconds. */
  static tooManyRequests(retryAfterSeconds: number): ApiError {
    return new ApiError(429, { code: "rate_limited", retryAfterSeconds });
  }

  static badRequest(detail: string): ApiError {
    return new ApiError(400, { detail, problems: [{ message: detail }] });
  }

  /** Query parameters a read cannot take (the change feed's: docs/changes.md). */
  static invalidQuery(problems: ProblemEntry[]): ApiError {
    return new ApiError(400, { problems, detail: problemText(problems) });
  }

  static unprocessable(problems: ProblemEntry[]): ApiError {
    return new ApiError(422, { problems, detail: problemText(problems) });
  }

  static conflict(message: string): ApiError {
    return new ApiError(409, { problems: [{ message }] });
  }
}
