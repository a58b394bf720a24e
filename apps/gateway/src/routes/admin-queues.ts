import { timingSafeEqual, createHash } from "node:crypto";
import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { KoaAdapter } from "@bull-board/koa";
import type Koa from "koa";
import { everyQueue, type Dashboard, type Queues } from "../deps";
import { ApiError } from "../errors/api-error";

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

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);
/** Jobs added by hand would reach the workers without the gateway's validation. */
const ADD_JOB = /\/api\/queues\/[^/]+\/add$/;

/**
 * A change may only come from the dashboard's own page. Browsers cache Basic credentials, so
 * any page the operator visits could otherwise post to the dashboard in their name: a write
 * whose browser names another origin is refused, and so is one with a body that an HTML form
 * can send cross-site without asking (form, multipart or plain text; the dashboard sends JSON
 * or nothing).
 */
function isSameSiteWrite(ctx: Koa.Context): boolean {
  if (ctx.request.is("urlencoded", "multipart", "text/plain")) return false;
  const fetchSite = ctx.get("sec-fetch-site");
  if (fetchSite !== "" && fetchSite !== "same-origin") return false;
  const origin = ctx.get("origin");
  // Koa's ctx.origin echoes the Origin header; our own origin is built from the request.
  return origin === "" || origin === `${ctx.protocol}://${ctx.host}`;
}

/**
 * The BullMQ dashboard; without ADMIN_TOKEN configured it refuses everyone. It is read-only
 * unless ADMIN_QUEUES_WRITABLE=true, and it never adds jobs. Other paths pass straight
 * through, so API requests do not go through the dashboard's middleware.
 */
export function adminQueues(deps: Queues & Dashboard): Koa.Middleware {
  const board = new KoaAdapter();
  board.setBasePath(ADMIN_QUEUES_PATH);
  const options = { readOnlyMode: !deps.adminQueuesWritable, allowRetries: deps.adminQueuesWritable };
  createBullBoard({
    queues: everyQueue(deps).map((queue) => new BullMQAdapter(queue, options)),
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
    if (!SAFE_METHODS.has(ctx.method) && (ADD_JOB.test(ctx.path) || !isSameSiteWrite(ctx))) {
      ctx.status = 403;
      ctx.body = { error: "forbidden" };
      return;
    }
    // A path the dashboard does not serve is our 404: passed on inside the dashboard, its error
    // handler would catch the 404 and answer 500.
    let unclaimed = false;
    await dashboard(ctx, async () => {
      unclaimed = true;
    });
    if (unclaimed) throw ApiError.notFound();
  };
}
