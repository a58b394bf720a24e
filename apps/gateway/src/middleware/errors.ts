import { logThrottle } from "@cm/config";
import { isUnavailable } from "@cm/db";
import { isRedisOutOfMemory } from "@cm/queue";
import type Koa from "koa";
import type { Logger } from "pino";
import { ApiError, type ErrorStyle } from "../api-error";
import { CredentialLookupsThrottled } from "../auth/credential-cache";
import { QueueWritesBackedUp } from "../identify-batcher";
import { requestIdOf, routeOf } from "./request-log";

const IDENTIFY_MESSAGES: Record<number, string> = {
  400: "Bad Request",
  401: "Invalid authentication: You must provide a valid auth_token to access this resource.",
  404: "The resource doesn't exist",
  413: "Payload Too Large",
  429: "Too Many Requests",
  500: "An error occurred with our API",
  503: "Service Unavailable",
};

const API_CODES: Record<number, string> = {
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  405: "method_not_allowed",
  500: "internal_error",
  503: "unavailable",
};

const BODY_FAILURES: Record<number, string> = {
  413: "body is larger than 256 KiB",
  415: "the body's Content-Encoding is not gzip, deflate, br or identity",
};

/**
 * Errors thrown by Koa's own helpers (body limits, bad JSON, unknown encodings) carry an HTTP
 * status; zlib's (a body that is not the gzip it says it is) carry a Z_ code.
 */
function asApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const { status, code } = (error ?? {}) as { status?: unknown; code?: unknown };
  if (typeof status === "number" && status >= 400 && status < 500) {
    const detail = BODY_FAILURES[status] ?? "body is not valid JSON";
    return new ApiError(status, { detail, problems: [{ message: detail }] });
  }
  if (typeof code === "string" && code.startsWith("Z_"))
    return ApiError.badRequest("body is not valid for its Content-Encoding");
  if (isUnavailable(error)) return ApiError.unavailable();
  // A full Redis frees up as workers drain it, a backed-up one catches up, a flood of unknown
  // tokens passes: the client should come back, not give up.
  if (isRedisOutOfMemory(error) || error instanceof QueueWritesBackedUp) return ApiError.unavailable();
  if (error instanceof CredentialLookupsThrottled) return ApiError.unavailable(1);
  return new ApiError(500);
}

/** Header values are printable ASCII, and a client should not need more than a sentence. */
const MAX_DETAIL = 300;
const headerSafe = (detail: string) => detail.replace(/[^\x20-\x7e]/g, "?").slice(0, MAX_DETAIL);

function errorStyle(ctx: Koa.Context): ErrorStyle {
  return ctx.state.errorStyle ?? (ctx.path.startsWith("/api/v2/users") ? "identify" : "api");
}

/** The identify error table of api.md (and our 413); any other client error is its 400. */
function identifyBody(error: ApiError): { status: number; message: string } {
  const status = IDENTIFY_MESSAGES[error.status] ? error.status : error.status < 500 ? 400 : 500;
  return { status, message: IDENTIFY_MESSAGES[status] as string };
}

function apiBody(error: ApiError): object {
  if (error.options.problems) return { errors: error.options.problems };
  return { error: error.options.code ?? API_CODES[error.status] ?? "error" };
}

/** Maps every failure to the contract's body shape for the route; nothing else writes error bodies. */
export function errorMiddleware(logger: Logger): Koa.Middleware {
  const logFailure = logThrottle(10);
  const logRejection = logThrottle(50);
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw ApiError.notFound();
    } catch (thrown) {
      const error = asApiError(thrown);
      const style = errorStyle(ctx);
      // An error answer names its request, so that a client can quote it and we can find its log line.
      const requestId = requestIdOf(ctx);
      ctx.set("x-request-id", requestId);
      const route = routeOf(ctx);
      const detail = error.options.detail === undefined ? undefined : headerSafe(error.options.detail);
      if (error.status >= 500) {
        logFailure((suppressed) => logger.error({ err: thrown, route, requestId, suppressed }, "request failed"));
      } else if (detail) {
        logRejection((suppressed) =>
          logger.info({ route, status: error.status, reason: detail, requestId, suppressed }, "request rejected"),
        );
      }
      if (style === "identify") {
        const body = identifyBody(error);
        ctx.status = body.status;
        ctx.body = body;
        if (detail && body.status < 500) ctx.set("x-error-detail", detail);
      } else {
        ctx.status = error.status;
        ctx.body = apiBody(error);
      }
      if (error.options.retryAfterSeconds !== undefined)
        ctx.set("Retry-After", String(error.options.retryAfterSeconds));
    }
  };
}
