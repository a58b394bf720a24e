import type Router from "@koa/router";
import type { IdentifyState } from "../state";
import { ROUTES } from "./table";
import { singleOperation, type UsersApiDeps } from "./users-api";

/** api.md "Identify a user": POST /users/track?auth_token=… */
export function identifyRoutes(router: Router<IdentifyState>, deps: UsersApiDeps): void {
  singleOperation(router, deps, ROUTES.identifyUser);
}
