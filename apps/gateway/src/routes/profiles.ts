import type Router from "@koa/router";
import type { GatewayDeps } from "../deps";
import type { IdentifyState } from "../state";
import { singleOperation } from "./users-api";

/** api.md "Edit a user" to "Delete a user": the rest of Vero's users API (docs/profiles.md). */
export function profileRoutes(router: Router<IdentifyState>, deps: GatewayDeps): void {
  singleOperation(router, deps, "edit", "/users/edit", ["PUT"]);
  singleOperation(router, deps, "tags", "/users/tags/edit", ["PUT"]);
  singleOperation(router, deps, "unsubscribe", "/users/unsubscribe", ["POST"]);
  singleOperation(router, deps, "resubscribe", "/users/resubscribe", ["POST"]);
  // Clients send PUT; Vero's 2016 documentation sent POST (curl -d).
  singleOperation(router, deps, "reidentify", "/users/reidentify", ["PUT", "POST"]);
  // vero-python 2.x deletes with DELETE, every other client with POST.
  singleOperation(router, deps, "delete", "/users/delete", ["POST", "DELETE"]);
}
