import type Router from "@koa/router";
import type { GatewayDeps } from "../deps";
import type { IdentifyState } from "../state";
import { deleteUser } from "../use-cases/delete-user";
import { editTags } from "../use-cases/edit-tags";
import { editUser } from "../use-cases/edit-user";
import { reidentifyUser } from "../use-cases/reidentify-user";
import { resubscribeUser } from "../use-cases/resubscribe-user";
import { unsubscribeUser } from "../use-cases/unsubscribe-user";
import { parseEditTagsBody, parseEditUserBody, parseReidentifyBody, parseUserRefBody } from "../validation";
import { usersApiOperation } from "./users-api";

/** api.md "Edit a user" to "Delete a user": the rest of Vero's users API (docs/profiles.md). */
export function profileRoutes(router: Router<IdentifyState>, deps: GatewayDeps): void {
  usersApiOperation(router, deps, "/users/edit", ["PUT"], (request) =>
    editUser(deps, request.projectId, parseEditUserBody(request.body), request),
  );
  usersApiOperation(router, deps, "/users/tags/edit", ["PUT"], (request) =>
    editTags(deps, request.projectId, parseEditTagsBody(request.body), request),
  );
  usersApiOperation(router, deps, "/users/unsubscribe", ["POST"], (request) =>
    unsubscribeUser(deps, request.projectId, parseUserRefBody(request.body), request),
  );
  usersApiOperation(router, deps, "/users/resubscribe", ["POST"], (request) =>
    resubscribeUser(deps, request.projectId, parseUserRefBody(request.body), request),
  );
  // Clients send PUT; Vero's 2016 documentation sent POST (curl -d).
  usersApiOperation(router, deps, "/users/reidentify", ["PUT", "POST"], (request) =>
    reidentifyUser(deps, request.projectId, parseReidentifyBody(request.body), request),
  );
  // vero-python 2.x deletes with DELETE, every other client with POST.
  usersApiOperation(router, deps, "/users/delete", ["POST", "DELETE"], (request) =>
    deleteUser(deps, request.projectId, parseUserRefBody(request.body), request),
  );
}
