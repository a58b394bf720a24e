import type { Logger } from "pino";
import { errorHandler, type ErrorRenderer } from "./error-handler";

const IDENTIFY_MESSAGES: Record<number, string> = {
  400: "Bad Request",
  401: "Invalid authentication: You must provide a valid auth_token to access this resource.",
  404: "The resource doesn't exist",
  408: "Request Timeout",
  409: "Conflict",
  413: "Payload Too Large",
  422: "Unprocessable Entity",
  429: "Too Many Requests",
  500: "An error occurred with our API",
  503: "Service Unavailable",
};

/**
 * api.md's identify error table and the answers we add to it: `{status, message}`. Any other
 * client error is its 400, explained in `x-error-detail`.
 */
const renderIdentifyError: ErrorRenderer = (ctx, error, detail) => {
  const status = IDENTIFY_MESSAGES[error.status] ? error.status : error.status < 500 ? 400 : 500;
  ctx.status = status;
  ctx.body = { status, message: IDENTIFY_MESSAGES[status] as string };
  if (detail && status < 500) ctx.set("x-error-detail", detail);
};

/** The error handler of the identify API (Vero's /users/… operations). */
export const identifyErrors = (logger: Logger) => errorHandler(logger, renderIdentifyError);
