import { idFromPath, journeyListRequest } from "@cm/domain";
import type Router from "@koa/router";
import type { Access, Postgres } from "../deps";
import { ApiError } from "../errors/api-error";
import type { ApiState } from "../state";
import { listJourneyMessages, listJourneys, readJourney } from "@cm/app";
import { apiRoute } from "./register";
import { ROUTES } from "./table";

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
export function journeyRoutes(router: Router<ApiState>, deps: Access & Postgres): void {
  apiRoute(router, deps, ROUTES.listJourneys, async (ctx) => {
    const parsed = journeyListRequest(ctx.query);
    if (!parsed.ok) throw ApiError.unprocessable(parsed.problems);
    ctx.body = await listJourneys(deps, ctx.state.credential.projectId, parsed.request);
  });

  apiRoute(router, deps, ROUTES.getJourney, async (ctx) => {
    ctx.type = "json";
    ctx.body = await readJourney(deps, ctx.state.credential.projectId, journeyId(ctx.params.id));
  });

  apiRoute(router, deps, ROUTES.listJourneyMessages, async (ctx) => {
    ctx.type = "json";
    ctx.body = await listJourneyMessages(deps, ctx.state.credential.projectId, journeyId(ctx.params.id));
  });
}
