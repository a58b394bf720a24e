import { timingSafeEqual, createHash } from "node:crypto";
import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { KoaAdapter } from "@bull-board/koa";
import type Koa from "koa";
import type { GatewayDeps } from "../deps";

export const ADMIN_QUEUES_PATH = "/admin/queues";

function sameSecret(given: string, expected: string): boolean {
  const digest = (text: string) => createHash("sha256").update(text).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/** The admin token, as `Authorization: Bearer <token>` or as the password of HTTP Basic (browsers). */
function presentedToken(header: string): string | null {
  const bearer = /^Bearer\s+(.+)$/i.exec(header);
  if (bearer) return bearer[1] as string;
  const basic = /^Basic\s+(.+)$/i.exec(header);
  if (!basic) return null;
  const decoded = Buffer.from(basic[1] as string, "base64").toString("utf8");
  return decoded.slice(decoded.indexOf(":") + 1);
}

/**
 * The BullMQ dashboard; without ADMIN_TOKEN configured it refuses everyone. Other paths pass
 * straight through, so API requests do not go through the dashboard's middleware.
 */
export function adminQueues(deps: GatewayDeps): Koa.Middleware {
  const board = new KoaAdapter();
  board.setBasePath(ADMIN_QUEUES_PATH);
  createBullBoard({
    queues: [new BullMQAdapter(deps.identifyQueue), new BullMQAdapter(deps.topicFanoutQueue)],
    serverAdapter: board,
  });

  const dashboard = board.registerPlugin();
  return async (ctx, next) => {
    if (!ctx.path.startsWith(ADMIN_QUEUES_PATH)) return next();
    const token = presentedToken(ctx.get("authorization"));
    if (deps.adminToken === undefined || token === null || !sameSecret(token, deps.adminToken)) {
      ctx.status = 401;
      ctx.set("WWW-Authenticate", 'Basic realm="queues", charset="UTF-8"');
      ctx.body = { error: "unauthorized" };
      return;
    }
    await dashboard(ctx, next);
  };
}
