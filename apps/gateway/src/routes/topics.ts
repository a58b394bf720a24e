import { idFromPath, parseNewTopic, parseTopicPatch, topicPageRequest } from "@cm/domain";
import type Router from "@koa/router";
import type { Access, Observability, Postgres, Queues } from "../deps";
import { ApiError } from "../errors/api-error";
import type { ApiState } from "../state";
import { createTopic, listTopics, updateTopic } from "@cm/app";
import { apiRoute, otherMethodsNotAllowed } from "./register";
import { ROUTES } from "./table";

/** api.md "Update a topic", and the create and list extensions of decisions.md "Topics". */
export function topicRoutes(router: Router<ApiState>, deps: Access & Postgres & Queues & Observability): void {
  apiRoute(router, deps, ROUTES.updateTopic, async (ctx) => {
    const id = idFromPath(ctx.params.id);
    if (id === null) throw ApiError.notFound();
    const patch = parseTopicPatch(ctx.request.body);
    ctx.body = await updateTopic(deps, ctx.state.credential.projectId, id, patch);
  });

  apiRoute(router, deps, ROUTES.createTopic, async (ctx) => {
    const body = parseNewTopic(ctx.request.body);
    const topic = await createTopic(deps, ctx.state.credential.projectId, body);
    ctx.status = 201;
    ctx.set("location", `${ctx.path}/${topic.id}`);
    ctx.body = topic;
  });

  apiRoute(router, deps, ROUTES.listTopics, async (ctx) => {
    const request = topicPageRequest({ limit: ctx.query.limit, cursor: ctx.query.cursor });
    if (!request.ok) throw ApiError.unprocessable(request.problems);
    ctx.body = await listTopics(deps, ctx.state.credential.projectId, request.page);
  });

  // Topics cannot be deleted (api.md); other methods are named as not allowed, not as unknown topics.
  otherMethodsNotAllowed(router, ROUTES.listTopics.path);
  otherMethodsNotAllowed(router, ROUTES.updateTopic.path);
}
