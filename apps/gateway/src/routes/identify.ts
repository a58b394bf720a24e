import { InvalidInput, toIdentifyEvent } from "@cm/domain";
import type Router from "@koa/router";
import { ApiError } from "../api-error";
import { authenticateIdentify } from "../auth/authenticate";
import { withinBodyBudget } from "../body/body-budget";
import { readIdentifyBody } from "../body/identify-body";
import type { GatewayDeps } from "../deps";
import { enforceRateLimit } from "../rate-limit/enforce";
import { allowAnyOrigin, answerPreflight } from "../middleware/browser-access";
import { parseIdentifyBody } from "../validation";

/** Every identify-API path also answers with Vero's `.json` suffix, as its clients call it. */
export const identifyPaths = (path: string): string[] => [path, `${path}.json`];

/** api.md "Identify a user": POST /users/track?auth_token=… */
export function identifyRoutes(router: Router, deps: GatewayDeps): void {
  router.options(identifyPaths("/users/track"), answerPreflight);
  router.post(identifyPaths("/users/track"), allowAnyOrigin, withinBodyBudget(deps.bodyBudget), async (ctx) => {
    const receivedAt = Date.now();
    const read = await readIdentifyBody(ctx);
    const credential = await authenticateIdentify(deps.credentials, ctx.querystring, read.ok ? read.value : undefined);
    await enforceRateLimit(ctx, deps.rateLimiter, credential.projectId);
    // An unreadable body is reported after the credential, so that a bad token is always 401.
    if (!read.ok) throw read.error;
    const body = parseIdentifyBody(read.value);
    let event;
    try {
      event = toIdentifyEvent(credential.projectId, body, receivedAt);
    } catch (error) {
      if (error instanceof InvalidInput) throw ApiError.badRequest(error.message);
      throw error;
    }
    await deps.identifyBatcher.enqueue(event, read.bytes);
    ctx.body = { status: 200, message: "Success." };
  });

  router.all(identifyPaths("/users/track"), () => {
    throw ApiError.notFound();
  });
}
