import { IdentifyRejection, toIdentifyEvent } from "@cm/domain";
import type Router from "@koa/router";
import { ApiError } from "../api-error";
import { requireAuthToken } from "../auth/authenticate";
import type { GatewayDeps } from "../deps";
import { readJsonBody } from "../middleware/json-body";
import { parseIdentifyBody } from "../validation";

/** api.md "Identify a user": POST /users/track?auth_token=… */
export function identifyRoutes(router: Router, deps: GatewayDeps): void {
  router.post("/users/track", requireAuthToken(deps.credentials), readJsonBody, async (ctx) => {
    const receivedAt = Date.now();
    const body = parseIdentifyBody(ctx.request.body);
    let event;
    try {
      event = toIdentifyEvent(ctx.state.credential.projectId, body, receivedAt);
    } catch (error) {
      if (error instanceof IdentifyRejection) throw ApiError.badRequest(error.message);
      throw error;
    }
    await deps.identifyBatcher.enqueue(event);
    ctx.body = { status: 200, message: "Success." };
  });

  router.all("/users/track", () => {
    throw ApiError.notFound();
  });
}
