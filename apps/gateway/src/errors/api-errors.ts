import type { Logger } from "pino";
import { errorHandler, type ErrorRenderer } from "./error-handler";

const API_CODES: Record<number, string> = {
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  405: "method_not_allowed",
  500: "internal_error",
  503: "unavailable",
};

/** Key-authenticated routes: `{errors:[…]}` naming each problem, otherwise `{error: code}`. */
const renderApiError: ErrorRenderer = (ctx, error) => {
  ctx.status = error.status;
  ctx.body = error.options.problems
    ? { errors: error.options.problems }
    : { error: error.options.code ?? API_CODES[error.status] ?? "error" };
};

/** The error handler of the key-authenticated API, and of every path no router claims. */
export const apiErrors = (logger: Logger) => errorHandler(logger, renderApiError);
