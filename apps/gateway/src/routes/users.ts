import type Router from "@koa/router";
import { requireApiKey } from "../auth/authenticate";
import type { GatewayDeps } from "../deps";
import { requireRevision } from "../middleware/revision";
import type { ApiState, AuthState } from "../state";
import { eventPageRequest, InvalidInput } from "@cm/domain";
import { listUserEvents } from "../use-cases/list-user-events";
import { readProfile } from "../use-cases/read-profile";

/** decisions.md "Profile read": GET /users/:id, by the user's id or email, and the user's events. */
export function userRoutes(router: Router<ApiState>, deps: GatewayDeps): void {
  const readAccess = requireApiKey(deps.credentials, "profile:read", deps.rateLimiter);

  router.get<AuthState>("/users/:id", readAccess, requireRevision, async (ctx) => {
    ctx.body = await readProfile(deps, ctx.state.credential.projectId, ctx.params.id as string);
  });

  // docs/events.md "Read".
  router.get<AuthState>("/users/:id/events", readAccess, requireRevision, async (ctx) => {
    const page = eventPageRequest(ctx.query);
    if (!page.ok) throw new InvalidInput(page.problems);
    ctx.body = await listUserEvents(deps, ctx.state.credential.projectId, ctx.params.id as string, page.value);
  });
}
