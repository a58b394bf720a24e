import {
  insertTopic,
  isDuplicateTopicName,
  lockTopic,
  saveTopic,
  startTopicFanout,
  topicsAfter,
  type TopicRow,
} from "@cm/db";
import {
  applyTopicPatch,
  describeTypiaErrors,
  idFromPath,
  sameTopicValues,
  topicCursor,
  topicFieldProblems,
  topicPageRequest,
  topicPatchProblems,
  topicResource,
  type NewTopicBody,
  type Problem,
  type TopicPatch,
} from "@cm/domain";
import type Router from "@koa/router";
import typia, { type IValidation } from "typia";
import { ApiError } from "../api-error";
import { requireApiKey } from "../auth/authenticate";
import type { GatewayDeps } from "../deps";
import { readJsonBody } from "../body/json-body";
import { requireRevision } from "../middleware/revision";

const validateTopicPatch = typia.createValidateEquals<TopicPatch>();
const validateNewTopic = typia.createValidateEquals<NewTopicBody>();

/** Every problem of a topic body at once: wrong types, and the rules typia cannot express. */
function parseTopicBody<T>(
  body: unknown,
  validate: (input: unknown) => IValidation<T>,
  rules: (fields: object) => Problem[],
): T {
  const input = body === "" ? {} : body; // a request without a body sends no fields
  const result = validate(input);
  const isObject = typeof input === "object" && input !== null && !Array.isArray(input);
  const problems = [...(result.success ? [] : describeTypiaErrors(result.errors)), ...(isObject ? rules(input) : [])];
  if (!result.success || problems.length > 0) throw ApiError.unprocessable(problems);
  return result.data;
}

function duplicateName(name: string): ApiError {
  return ApiError.conflict(`another topic of this project is named "${name}" (names are compared ignoring case)`);
}

/** The fan-out job is queued before the commit: if Redis refuses it, the update is rolled back. */
async function queueFanout(deps: GatewayDeps, topicId: number, generation: number): Promise<void> {
  try {
    await deps.topicFanoutQueue.add("fan-out", { topicId, generation });
  } catch (error) {
    deps.logger.warn(
      { topicId, err: error instanceof Error ? error.message : String(error) },
      "topic fan-out not queued",
    );
    throw ApiError.unavailable();
  }
}

/**
 * api.md "Update a topic" rules 1–4 in one transaction. The topic row stays locked to the
 * commit, so updates of one topic and the chunks of its fan-out take turns. A patch that
 * changes nothing writes nothing.
 */
async function updateTopic(deps: GatewayDeps, projectId: number, id: number, patch: TopicPatch): Promise<TopicRow> {
  try {
    return await deps.sql.begin(async (tx) => {
      const current = await lockTopic(tx, projectId, id);
      if (current === null) throw ApiError.notFound();
      const next = applyTopicPatch(current, patch);
      if (sameTopicValues(current, next)) return current;
      const saved = await saveTopic(tx, id, next);
      if (next.default_status !== current.default_status) {
        await queueFanout(deps, id, await startTopicFanout(tx, id));
      }
      return saved;
    });
  } catch (error) {
    if (isDuplicateTopicName(error)) throw duplicateName(patch.name?.trim() ?? "");
    throw error;
  }
}

/** api.md "Update a topic", and the create and list extensions of decisions.md "Topics". */
export function topicRoutes(router: Router, deps: GatewayDeps): void {
  const readAccess = requireApiKey(deps.credentials, "campaign:read", deps.rateLimiter);
  const writeAccess = requireApiKey(deps.credentials, "campaign:write", deps.rateLimiter);

  router.patch("/topics/:id", writeAccess, requireRevision, readJsonBody, async (ctx) => {
    const id = idFromPath(ctx.params.id);
    if (id === null) throw ApiError.notFound();
    const patch = parseTopicBody(ctx.request.body, validateTopicPatch, topicPatchProblems);
    const topic = await updateTopic(deps, ctx.state.credential.projectId, id, patch);
    ctx.body = topicResource(topic);
  });

  router.post("/topics", writeAccess, requireRevision, readJsonBody, async (ctx) => {
    const body = parseTopicBody(ctx.request.body, validateNewTopic, topicFieldProblems);
    const name = body.name.trim();
    let topic: TopicRow;
    try {
      topic = await insertTopic(deps.sql, {
        projectId: ctx.state.credential.projectId,
        name,
        description: body.description ?? null,
        defaultStatus: body.default_status ?? "subscribed",
      });
    } catch (error) {
      if (isDuplicateTopicName(error)) throw duplicateName(name);
      throw error;
    }
    ctx.status = 201;
    ctx.set("location", `${ctx.path}/${topic.id}`);
    ctx.body = topicResource(topic);
  });

  router.get("/topics", readAccess, requireRevision, async (ctx) => {
    const request = topicPageRequest({ limit: ctx.query.limit, cursor: ctx.query.cursor });
    if (!request.ok) throw ApiError.unprocessable(request.problems);
    const { limit, afterId } = request.page;
    const rows = await topicsAfter(deps.sql, ctx.state.credential.projectId, afterId, limit + 1);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    ctx.body = {
      data: page.map(topicResource),
      next_cursor: rows.length > limit && last !== undefined ? topicCursor(last.id) : null,
    };
  });

  // Topics cannot be deleted (api.md); other methods are named as not allowed, not as unknown topics.
  for (const [path, allow] of [
    ["/topics", "GET, POST"],
    ["/topics/:id", "PATCH"],
  ] as const) {
    router.all(path, (ctx) => {
      ctx.set("allow", allow);
      throw new ApiError(405, { code: "method_not_allowed" });
    });
  }
}
