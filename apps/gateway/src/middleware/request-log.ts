import { randomUUID } from "node:crypto";
import { logThrottle } from "@cm/config";
import type Koa from "koa";
import type { Logger } from "pino";
import type { GatewayMetrics } from "../metrics";
import type { RequestState } from "../state";

/**
 * The request's id: the proxy's `x-request-id` when it set one, otherwise made on first use.
 * Made only when a log line or an error answer needs it: naming every answer cost about 6% of
 * the gateway's CPU per identify (bench/identify).
 */
export function requestIdOf(ctx: Koa.ParameterizedContext<RequestState>): string {
  ctx.state.requestId ??= ctx.get("x-request-id") || randomUUID();
  return ctx.state.requestId;
}

/** The route pattern a request matched (`/api/v2/users/:id`), never its path, or "unmatched". */
export function routeOf(ctx: Koa.ParameterizedContext): string {
  return (ctx as { _matchedRoute?: string })._matchedRoute ?? "unmatched";
}

/**
 * Counts each request in the metrics by route pattern, and logs its outcome with its id. Only
 * the route pattern is logged: the query string carries the identify auth_token, and a path
 * can carry an email (a profile read by email).
 */
export function requestLog(logger: Logger, metrics: GatewayMetrics): Koa.Middleware<RequestState> {
  // A failure that hits every request (Redis full, say) logs a few lines a second, not one a request.
  const logFailed = logThrottle(10);
  return async (ctx, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      const seconds = (performance.now() - started) / 1000;
      const route = routeOf(ctx);
      metrics.httpRequestSeconds.observe({ method: ctx.method, route, status: String(ctx.status) }, seconds);
      const line = (suppressed?: number) => ({
        requestId: requestIdOf(ctx),
        method: ctx.method,
        route,
        status: ctx.status,
        ms: Math.round(seconds * 1000),
        suppressed,
      });
      if (ctx.status >= 500) logFailed((suppressed) => logger.warn(line(suppressed), "request"));
      else if (logger.isLevelEnabled("debug")) logger.debug(line(), "request");
    }
  };
}
