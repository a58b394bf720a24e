import type Router from "@koa/router";
import type { IdentifyState } from "../state";
import { openRoute } from "./register";
import { ROUTES } from "./table";
import { singleOperation, type UsersApiDeps } from "./users-api";

/** Vero's event API (docs/events.md): track, answered like identify; the heartbeat its clients check. */
export function eventRoutes(router: Router<IdentifyState>, deps: UsersApiDeps): void {
  singleOperation(router, deps, ROUTES.trackEvent);
  openRoute(router, ROUTES.heartbeat, (ctx) => {
    ctx.body = { status: 200, message: "Success." };
  });
}
