import type Router from "@koa/router";
import type { IdentifyState } from "../state";
import { ROUTES, type Route } from "./table";
import { singleOperation, type UsersApiDeps } from "./users-api";

/** Identify and track, most of the traffic, have the busiest router (identify.ts, events.ts). */
const ON_BUSIEST_ROUTER: Route[] = [ROUTES.identifyUser, ROUTES.trackEvent];

/**
 * api.md "Edit a user" to "Delete a user": the rest of Vero's users API (docs/profiles.md), each
 * single operation registered from its declaration in routes/table.ts.
 */
export function profileRoutes(router: Router<IdentifyState>, deps: UsersApiDeps): void {
  for (const route of Object.values(ROUTES) as Route[]) {
    if (route.operationType !== undefined && !ON_BUSIEST_ROUTER.includes(route)) singleOperation(router, deps, route);
  }
}
