import { resolveRevision } from "@cm/domain";
import type Koa from "koa";
import { ApiError } from "../api-error";

/** decisions.md "revision": validates the header and names the applied revision in the response. */
export const applyRevision: Koa.Middleware = async (ctx, next) => {
  const header = ctx.get("revision");
  const resolved = resolveRevision(header === "" ? undefined : header);
  if (!resolved.ok) throw new ApiError(400, { problems: [{ message: resolved.message, path: "header.revision" }] });
  ctx.set("revision", resolved.revision.date);
  await next();
};
