import type { Logger } from "pino";
import { errorHandler, type ErrorRenderer } from "./error-handler";

const SPEC_MESSAGES: Record<number, string> = {
  400: "Bad Request",
  401: "Invalid write key: give the project's identify token as the user name of HTTP Basic authentication, or as writeKey in the body",
  404: "Not Found",
  408: "Request Timeout",
  429: "Too Many Requests",
  500: "An error occurred with our API",
  503: "Service Unavailable",
};

/**
 * The tracking spec's errors (docs/tracking-spec.md): `{success: false, message}`, the reason of
 * a 400 in `message`. A body past the limits, or in an encoding we do not read, is 400, as
 * Segment answers it: the SDKs drop a batch answered 400 and retry any other status, which could
 * never succeed.
 */
const renderSpecError: ErrorRenderer = (ctx, error, detail) => {
  const status = error.status === 413 || error.status === 415 ? 400 : error.status;
  ctx.status = status;
  const message = status < 500 && detail ? detail : (SPEC_MESSAGES[status] ?? SPEC_MESSAGES[status < 500 ? 400 : 500]);
  ctx.body = { success: false, message };
};

/** The error handler of the /v1 routes. */
export const trackingSpecErrors = (logger: Logger) => errorHandler(logger, renderSpecError);
