import { journeyJson, journeyMessagesJson } from "@cm/db";
import { idFromPath } from "@cm/domain";
import type Router from "@koa/router";
import { ApiError } from "../api-error";
import { requireApiKey } from "../auth/authenticate";
import type { GatewayDeps } from "../deps";
import { requireRevision } from "../middleware/revision";

/** A journey id from the path; anything that cannot be one is an unknown journey (decisions.md). */
function journeyId(param: string | undefined): number {
  const id = idFromPath(param);
  if (id === null) throw ApiError.notFound();
  return id;
}

/**
 * api.md "Get a journey" and "List messages of a journey". The repository answers with the
 * resource's JSON text, which is sent as is.
 */
export function journeyRoutes(router: Router, deps: GatewayDeps): void {
  const readAccess = requireApiKey(deps.credentials, "campaign:read", deps.rateLimiter);

  router.get("/journeys/:id", readAccess, requireRevision, async (ctx) => {
    const journey = await journeyJson(deps.sql, ctx.state.credential.projectId, journeyId(ctx.params.id));
    if (journey === null) throw ApiError.notFound();
    ctx.type = "json";
    ctx.body = journey;
  });

  router.get("/journeys/:id/messages", readAccess, requireRevision, async (ctx) => {
    const messages = await journeyMessagesJson(deps.sql, ctx.state.credential.projectId, journeyId(ctx.params.id));
    if (messages === null) throw ApiError.notFound();
    ctx.type = "json";
    ctx.body = messages;
  });
}
