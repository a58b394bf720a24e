import type Router from "@koa/router";
import { logThrottle } from "@cm/config";
import type { Access, Observability, Postgres } from "../deps";
import { requestIdOf, routeOf } from "../middleware/request-log";
import type { ApiState } from "../state";
import type { Credential } from "@cm/db";
import { eventPageRequest, InvalidInput, profileKeysWith, profileListRequest, type ProfileKeyOf } from "@cm/domain";
import { exportUser, listProfiles, listUserEvents, readProfile } from "@cm/app";
import { apiRoute } from "./register";
import { ROUTES } from "./table";

/** The stored keys of the users of the credential's project. */
function credentialProfileKeys(credential: Credential): ProfileKeyOf {
  return profileKeysWith(new Map([[credential.projectId, credential.profileKeySecret]]));
}

/**
 * decisions.md "Profile read": GET /users/:id, by the user's id or email, and the user's events;
 * everything stored about a user; and the list of profiles, by email among other filters
 * (docs/api.md "List users").
 */
export function userRoutes(router: Router<ApiState>, deps: Access & Postgres & Observability): void {
  apiRoute(router, deps, ROUTES.listUsers, async (ctx) => {
    const request = profileListRequest(ctx.query);
    if (!request.ok) throw new InvalidInput(request.problems);
    ctx.body = await listProfiles(deps, ctx.state.credential.projectId, request.value);
  });

  apiRoute(router, deps, ROUTES.getProfile, async (ctx) => {
    const { projectId } = ctx.state.credential;
    ctx.body = await readProfile(deps, projectId, ctx.params.id as string, credentialProfileKeys(ctx.state.credential));
  });

  // docs/api.md "Export a user": for a data-subject access request.
  const logExportFailure = logThrottle(10);
  apiRoute(router, deps, ROUTES.exportUser, async (ctx) => {
    const { projectId } = ctx.state.credential;
    const keyOf = credentialProfileKeys(ctx.state.credential);
    const document = await exportUser(deps, projectId, ctx.params.id as string, keyOf);
    // Once the answer has begun, an error can only cut it short: Koa's pipeline then closes the
    // connection before the chunked body's last chunk, which a client reads as a failed answer,
    // never as a whole document. No error handler sees such an error, so it is logged here.
    document.once("error", (error) => {
      const [route, requestId] = [routeOf(ctx), requestIdOf(ctx)];
      logExportFailure((suppressed) =>
        deps.logger.error({ err: error, route, requestId, suppressed }, "export cut off by an error"),
      );
    });
    ctx.type = "json";
    ctx.body = document;
  });

  // docs/events.md "Read".
  apiRoute(router, deps, ROUTES.listUserEvents, async (ctx) => {
    const page = eventPageRequest(ctx.query);
    if (!page.ok) throw new InvalidInput(page.problems);
    const { projectId } = ctx.state.credential;
    const keyOf = credentialProfileKeys(ctx.state.credential);
    ctx.body = await listUserEvents(deps, projectId, ctx.params.id as string, page.value, keyOf);
  });
}
