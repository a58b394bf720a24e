import { createApiKey, listProjectCredentials, requireKeyManager, revokeProjectCredential } from "@cm/app";
import { bigIdFromPath, parseNewApiKey } from "@cm/domain";
import type Router from "@koa/router";
import type { Access, Postgres } from "../deps";
import { ApiError } from "../errors/api-error";
import type { ApiState } from "../state";
import { apiRoute, otherMethodsNotAllowed } from "./register";
import { ROUTES } from "./table";

/** api.md "API keys": the project's keys, managed by a key holding keys:read or keys:write. */
export function keyRoutes(router: Router<ApiState>, deps: Access & Postgres): void {
  apiRoute(router, deps, ROUTES.listKeys, async (ctx) => {
    ctx.body = { data: await listProjectCredentials(deps, ctx.state.credential.projectId, "api_key") };
  });

  apiRoute(router, deps, ROUTES.createKey, async (ctx) => {
    const { permissions } = parseNewApiKey(ctx.request.body);
    const { credential } = ctx.state;
    await requireKeyManager(deps, credential.id);
    const key = await createApiKey(deps, credential.projectId, permissions, credential.permissions);
    ctx.status = 201;
    ctx.set("location", `${ctx.path}/${key.id}`);
    ctx.body = key;
  });

  apiRoute(router, deps, ROUTES.revokeKey, async (ctx) => {
    const id = bigIdFromPath(ctx.params.id);
    if (id === null) throw ApiError.notFound();
    await requireKeyManager(deps, ctx.state.credential.id);
    await revokeProjectCredential(deps, { id, kind: "api_key", projectId: ctx.state.credential.projectId });
    deps.credentials.forget(id);
    ctx.status = 204;
  });

  otherMethodsNotAllowed(router, ROUTES.listKeys.path);
  otherMethodsNotAllowed(router, ROUTES.revokeKey.path);
}
