import { idFromPath, journeyListRequest } from "@cm/domain";
import type Router from "@koa/router";
import { requireApiKey } from "../auth/authenticate";
import type { GatewayDeps } from "../deps";
import { ApiError } from "../errors/api-error";
import { requireRevision } from "../middleware/revision";
import type { ApiState, AuthState } from "../state";
import { listJourneyMessages } from "../use-cases/list-journey-messages";
import { listJourneys } from "../use-cases/list-journeys";
import { readJourney } from "../use-cases/read-journey";

/** A journey id from the path; anything that cannot be one is an unknown journey (decisions.md). */
function journeyId(param: string | undefined): number {
  const id = idFromPath(param);
  if (id === null) throw ApiError.notFound();
  return id;
}

/**
 * api.md "Get a journey" and "List messages of a journey", sent as the JSON text Postgres built,
 * and the journey list (docs/api.md "List journeys", decisions.md's "journey list").
 */
export function journeyRoutes(router: Router<ApiState>, deps: GatewayDeps): void {
  const readAccess = requireApiKey(deps.credentials, "campaign:read", deps.rateLimiter, deps.poolShares);

  router.get<AuthState>("/journeys", readAccess, requireRevision, async (ctx) => {
    const parsed = journeyListRequest(ctx.query);
    if (!parsed.ok) throw ApiError.unprocessable(parsed.problems);
    ctx.body = await listJourneys(deps, ctx.state.credential.projectId, parsed.request);
  });

  router.get<AuthState>("/journeys/:id", readAccess, requireRevision, async (ctx) => {
    ctx.type = "json";
    ctx.body = await readJourney(deps, ctx.state.credential.projectId, journeyId(ctx.params.id));
  });

  router.get<AuthState>("/journeys/:id/messages", readAccess, requireRevision, async (ctx) => {
    ctx.type = "json";
    ctx.body = await listJourneyMessages(deps, ctx.state.credential.projectId, journeyId(ctx.params.id));
  });
}
