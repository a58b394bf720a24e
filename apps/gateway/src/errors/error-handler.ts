import { logThrottle } from "@cm/config";
import { MAX_REASON_LENGTH } from "@cm/domain";
import type Koa from "koa";
import type { Logger } from "pino";
import { requestIdOf, routeOf } from "../middleware/request-log";
import type { RequestState } from "../state";
import type { ApiError } from "./api-error";
import { toApiError } from "./http-error";

/** Writes the answer for an error in one family of the contract's error bodies. */
export type ErrorRenderer = (ctx: Koa.ParameterizedContext<RequestState>, error: ApiError, detail?: string) => void;

/** Header values are printable ASCII, and a client should not need more than a sentence. */
const headerSafe = (detail: string) => detail.replace(/[^\x20-\x7e]/g, "?").slice(0, MAX_REASON_LENGTH);

/**
 * One router's error handler (as fastify scopes one per plugin): whatever its routes throw is
 * answered in the router's body style, named by a request id, and logged without the request.
 */
export function errorHandler(logger: Logger, render: ErrorRenderer): Koa.Middleware<RequestState> {
  const logFailure = logThrottle(10);
  const logRejection = logThrottle(50);
  return async (ctx, next) => {
    try {
      await next();
    } catch (thrown) {
      const error = toApiError(thrown);
      // An error answer names its request, so that a client can quote it and we can find its log line.
      const requestId = requestIdOf(ctx);
      ctx.set("x-request-id", requestId);
      const route = routeOf(ctx);
      const detail = error.options.detail === undefined ? undefined : headerSafe(error.options.detail);
      if (error.status >= 500 && !error.options.shed) {
        logFailure((suppressed) => logger.error({ err: thrown, route, requestId, suppressed }, "request failed"));
      } else if (detail) {
        logRejection((suppressed) =>
          logger.info({ route, status: error.status, reason: detail, requestId, suppressed }, "request rejected"),
        );
      }
      render(ctx, error, detail);
      if (error.options.retryAfterSeconds !== undefined)
        ctx.set("Retry-After", String(error.options.retryAfterSeconds));
    }
  };
}
