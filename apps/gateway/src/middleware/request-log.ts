import { randomUUID } from "node:crypto";
import type Koa from "koa";
import type { Logger } from "pino";
import type { GatewayMetrics } from "../metrics";

/**
 * Gives each request an id (kept from `x-request-id` when a proxy set one), counts it in the
 * metrics by route pattern, and logs its outcome. Only the path is logged: the query string
 * carries the identify auth_token.
 */
export function requestLog(logger: Logger, metrics: GatewayMetrics): Koa.Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    const requestId = ctx.get("x-request-id") || randomUUID();
    ctx.state.requestId = requestId;
    ctx.set("x-request-id", requestId);
    try {
      await next();
    } finally {
      const seconds = (performance.now() - started) / 1000;
      const route = (ctx as { _matchedRoute?: string })._matchedRoute ?? "unmatched";
      metrics.httpRequestSeconds.observe({ method: ctx.method, route, status: String(ctx.status) }, seconds);
      const level = ctx.status >= 500 ? "warn" : "debug";
      if (logger.isLevelEnabled(level)) {
        logger[level]({ requestId, method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(seconds * 1000) }, "request");
      }
    }
  };
}
