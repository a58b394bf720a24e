import { listWebhooks, replayWebhook } from "@cm/app";
import { bigIdFromPath } from "@cm/domain";
import type Router from "@koa/router";
import type { Access, Postgres } from "../deps";
import { ApiError } from "../errors/api-error";
import type { ApiState } from "../state";
import { apiRoute, otherMethodsNotAllowed } from "./register";
import { ROUTES } from "./table";

/** api.md "Webhooks": the project's endpoints and where each stands; a parked one replayed. */
export function webhookRoutes(router: Router<ApiState>, deps: Access & Postgres): void {
  apiRoute(router, deps, ROUTES.listWebhooks, async (ctx) => {
    ctx.body = await listWebhooks(deps, ctx.state.credential.projectId);
  });

  apiRoute(router, deps, ROUTES.replayWebhook, async (ctx) => {
    const id = bigIdFromPath(ctx.params.id);
    if (id === null) throw ApiError.notFound();
    await replayWebhook(deps, { id, projectId: ctx.state.credential.projectId });
    ctx.status = 204;
  });

  otherMethodsNotAllowed(router, ROUTES.listWebhooks.path);
  otherMethodsNotAllowed(router, ROUTES.replayWebhook.path);
}
