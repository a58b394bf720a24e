import { isUnavailable } from "@cm/db";
import type Koa from "koa";
import type { Logger } from "pino";
import { ApiError, type ErrorStyle } from "../api-error";
import { requestIdOf } from "./request-log";

const IDENTIFY_MESSAGES: Record<number, string> = {
  400: "Bad Request",
  401: "Invalid authentication: You must provide a valid auth_token to access this resource.",
  404: "The resource doesn't exist",
  413: "Payload Too Large",
  500: "An error occurred with our API",
};

const API_CODES: Record<number, string> = {
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  405: "method_not_allowed",
  500: "internal_error",
  503: "unavailable",
};

/** Errors thrown by Koa's own helpers (body parser limits, bad JSON) carry an HTTP status. */
function asApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const status = (error as { status?: unknown } | null)?.status;
  if (typeof status === "number" && status >= 400 && status < 500) {
    const detail = status === 413 ? "body is larger than 256 KiB" : "body is not valid JSON";
    return new ApiError(status, { detail, problems: [{ message: detail }] });
  }
  if (isUnavailable(error)) return ApiError.unavailable();
  return new ApiError(500);
}

function errorStyle(ctx: Koa.Context): ErrorStyle {
  return ctx.state.errorStyle ?? (ctx.path.startsWith("/api/v2/users") ? "identify" : "api");
}

function identifyBody(error: ApiError): { status: number; message: string } {
  const status = IDENTIFY_MESSAGES[error.status] ? error.status : 500;
  return { status, message: IDENTIFY_MESSAGES[status] as string };
}

function apiBody(error: ApiError): object {
  if (error.options.problems) return { errors: error.options.problems };
  return { error: error.options.code ?? API_CODES[error.status] ?? "error" };
}

/** Maps every failure to the contract's body shape for the route; nothing else writes error bodies. */
export function errorMiddleware(logger: Logger): Koa.Middleware {
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
      if (error.status >= 500) {
        logger.error({ err: thrown, path: ctx.path, requestId }, "request failed");
      } else if (error.options.detail) {
        logger.info({ path: ctx.path, status: error.status, reason: error.options.detail, requestId }, "request rejected");
      }
      if (style === "identify") {
        const body = identifyBody(error);
        ctx.status = body.status;
        ctx.body = body;
        if (error.options.detail && body.status < 500) ctx.set("x-error-detail", error.options.detail);
      } else {
        ctx.status = error.status;
        ctx.body = apiBody(error);
        if (error.options.retryAfterSeconds !== undefined) ctx.set("Retry-After", String(error.options.retryAfterSeconds));
      }
    }
  };
}
