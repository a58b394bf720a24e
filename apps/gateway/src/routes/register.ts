import type Router from "@koa/router";
import type { RouterMiddleware } from "@koa/router";
import { requireApiKey } from "../auth/authenticate";
import { readJsonBody } from "../body/json-body";
import type { Access, Postgres } from "../deps";
import { ApiError } from "../errors/api-error";
import { requireRevision } from "../middleware/revision";
import type { ApiState, AuthState } from "../state";
import { koaPath, ROUTES, type Route } from "./table";

// The routers register each operation from its declaration in routes/table.ts, the same one
// the OpenAPI document lists, so that no operation answers without its reference entry.

/** An operation anyone may call. */
export function openRoute<State>(router: Router<State>, route: Route, handler: RouterMiddleware<State>): void {
  router.register(koaPath(route.path), [route.method], handler);
}

/**
 * An operation of the key-authenticated API: the key and its permission checked (with the
 * project's rate limit and share of the pool), the revision named, and a JSON body read when
 * the operation takes one.
 */
export function apiRoute(
  router: Router<ApiState>,
  deps: Access & Postgres,
  route: Route,
  handler: RouterMiddleware<ApiState & AuthState>,
): void {
  if (route.permission === undefined) throw new Error(`${route.operation.operationId} names no permission`);
  const access = requireApiKey(deps.credentials, route.permission, deps.rateLimiter, deps.poolShares);
  const body = route.operation.requestBody === undefined ? [] : [readJsonBody];
  // The handler runs after `access` has set ctx.state.credential, which the router's type cannot say.
  const middleware = [access, requireRevision, ...body, handler] as unknown as RouterMiddleware<ApiState>[];
  router.register(koaPath(route.path), [route.method], middleware);
}

/** Any other method on `path` is named as not allowed (405, with the methods it has), not as an unknown resource. */
export function otherMethodsNotAllowed(router: Router<ApiState>, path: string): void {
  const allow = Object.values(ROUTES as Record<string, Route>)
    .filter((route) => route.path === path)
    .map((route) => route.method.toUpperCase())
    .join(", ");
  router.all(koaPath(path), (ctx) => {
    ctx.set("allow", allow);
    throw ApiError.methodNotAllowed();
  });
}
