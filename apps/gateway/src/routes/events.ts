import type Router from "@koa/router";
import type { GatewayDeps } from "../deps";
import type { IdentifyState } from "../state";
import { trackEvent } from "../use-cases/track-event";
import { usersApiOperation } from "./users-api";

/** Vero's event API (docs/events.md): track, answered like identify; the heartbeat its clients check. */
export function eventRoutes(router: Router<IdentifyState>, deps: GatewayDeps): void {
  usersApiOperation(router, deps, "/events/track", ["POST"], (request) => trackEvent(deps, request));
  router.get("/heartbeat", (ctx) => {
    ctx.body = { status: 200, message: "Success." };
  });
}
