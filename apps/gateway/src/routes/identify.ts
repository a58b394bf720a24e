import type Router from "@koa/router";
import { authenticateIdentify } from "../auth/authenticate";
import { withinBodyBudget } from "../body/body-budget";
import { readIdentifyBody } from "../body/identify-body";
import type { GatewayDeps } from "../deps";
import { ApiError } from "../errors/api-error";
import { allowAnyOrigin, answerPreflight } from "../middleware/browser-access";
import { enforceRateLimit } from "../rate-limit/enforce";
import type { IdentifyState } from "../state";
import { acceptIdentify } from "../use-cases/accept-identify";
import { parseIdentifyBody } from "../validation";

/** Every identify-API path also answers with Vero's `.json` suffix, as its clients call it. */
export const identifyPaths = (path: string): string[] => [path, `${path}.json`];

/** api.md "Identify a user": POST /users/track?auth_token=… */
export function identifyRoutes(router: Router<IdentifyState>, deps: GatewayDeps): void {
  router.options(identifyPaths("/users/track"), answerPreflight);
  router.post(identifyPaths("/users/track"), allowAnyOrigin, withinBodyBudget(deps.bodyBudget), async (ctx) => {
    const receivedAt = Date.now();
    // The credential may be in the body, so the body is read first, but checked only after it:
    // a bad token is always 401.
    const read = await readIdentifyBody(ctx);
    const { projectId } = await authenticateIdentify(
      deps.credentials,
      ctx.querystring,
      read.ok ? read.value : undefined,
    );
    await enforceRateLimit(ctx, deps.rateLimiter, projectId);
    if (!read.ok) throw read.error;
    const body = parseIdentifyBody(read.value);
    ctx.body = await acceptIdentify(deps, projectId, body, { receivedAt, bytes: read.bytes });
  });

  router.all(identifyPaths("/users/track"), () => {
    throw ApiError.notFound();
  });
}
