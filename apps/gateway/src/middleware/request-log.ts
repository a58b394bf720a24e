import { randomUUID } from "node:crypto";
import type Koa from "koa";
import type { Logger } from "pino";

/**
 * Gives each request an id (kept from `x-request-id` when a proxy set one) and logs its outcome.
 * Only the path is logged: the query string carries the identify auth_token.
 */
export function requestLog(logger: Logger): Koa.Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    const requestId = ctx.get("x-request-id") || randomUUID();
    ctx.state.requestId = requestId;
    ctx.set("x-request-id", requestId);
    await next();
    if (logger.isLevelEnabled("debug") || ctx.status >= 500) {
      logger[ctx.status >= 500 ? "warn" : "debug"](
        { requestId, method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(performance.now() - started) },
        "request",
      );
    }
  };
}
