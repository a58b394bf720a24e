import type Router from "@koa/router";
import type { GatewayDeps } from "../deps";
import type { IdentifyState } from "../state";
import { ROUTES } from "./table";
import { singleOperation } from "./users-api";

/** api.md "Edit a user" to "Delete a user": the rest of Vero's users API (docs/profiles.md). */
export function profileRoutes(router: Router<IdentifyState>, deps: GatewayDeps): void {
  singleOperation(router, deps, "edit", ROUTES.editUser);
  singleOperation(router, deps, "tags", ROUTES.editTags);
  singleOperation(router, deps, "unsubscribe", ROUTES.unsubscribeUser);
  singleOperation(router, deps, "resubscribe", ROUTES.resubscribeUser);
  singleOperation(router, deps, "reidentify", ROUTES.reidentifyUser);
  singleOperation(router, deps, "delete", ROUTES.deleteUser);
}
