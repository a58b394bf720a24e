import type Router from "@koa/router";
import type { GatewayDeps } from "../deps";
import type { IdentifyState } from "../state";
import { acceptIdentify } from "../use-cases/accept-identify";
import { parseIdentifyBody } from "../validation";
import { usersApiOperation } from "./users-api";

/** api.md "Identify a user": POST /users/track?auth_token=… */
export function identifyRoutes(router: Router<IdentifyState>, deps: GatewayDeps): void {
  usersApiOperation(router, deps, "/users/track", ["POST"], (request) =>
    acceptIdentify(deps, request.projectId, parseIdentifyBody(request.body), request),
  );
}
