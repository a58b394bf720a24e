import { idFromPath, topicPageRequest } from "@cm/domain";
import type Router from "@koa/router";
import { requireApiKey } from "../auth/authenticate";
import { readJsonBody } from "../body/json-body";
import type { GatewayDeps } from "../deps";
import { ApiError } from "../errors/api-error";
import { requireRevision } from "../middleware/revision";
import type { ApiState, AuthState } from "../state";
import { createTopic } from "../use-cases/create-topic";
import { listTopics } from "../use-cases/list-topics";
import { updateTopic } from "../use-cases/update-topic";
import { parseNewTopic, parseTopicPatch } from "../validation";

/** api.md "Update a topic", and the create and list extensions of decisions.md "Topics". */
export function topicRoutes(router: Router<ApiState>, deps: GatewayDeps): void {
  const readAccess = requireApiKey(deps.credentials, "campaign:read", deps.rateLimiter, deps.poolShares);
  const writeAccess = requireApiKey(deps.credentials, "campaign:write", deps.rateLimiter, deps.poolShares);

  router.patch<AuthState>("/topics/:id", writeAccess, requireRevision, readJsonBody, async (ctx) => {
    const id = idFromPath(ctx.params.id);
    if (id === null) throw ApiError.notFound();
    const patch = parseTopicPatch(ctx.request.body);
    ctx.body = await updateTopic(deps, ctx.state.credential.projectId, id, patch);
  });

  router.post<AuthState>("/topics", writeAccess, requireRevision, readJsonBody, async (ctx) => {
    const body = parseNewTopic(ctx.request.body);
    const topic = await createTopic(deps, ctx.state.credential.projectId, body);
    ctx.status = 201;
    ctx.set("location", `${ctx.path}/${topic.id}`);
    ctx.body = topic;
  });

  router.get<AuthState>("/topics", readAccess, requireRevision, async (ctx) => {
    const request = topicPageRequest({ limit: ctx.query.limit, cursor: ctx.query.cursor });
    if (!request.ok) throw ApiError.unprocessable(request.problems);
    ctx.body = await listTopics(deps, ctx.state.credential.projectId, request.page);
  });

  // Topics cannot be deleted (api.md); other methods are named as not allowed, not as unknown topics.
  for (const [path, allow] of [
    ["/topics", "GET, POST"],
    ["/topics/:id", "PATCH"],
  ] as const) {
    router.all(path, (ctx) => {
      ctx.set("allow", allow);
      throw ApiError.methodNotAllowed();
    });
  }
}
