import { LATEST_REVISION, resolveRevision } from "@cm/domain";
import type Koa from "koa";
import { ApiError } from "../api-error";

/**
 * decisions.md "revision": validates the header and names the applied revision in the
 * response. It runs before authentication, so that every answer names one, errors included;
 * the 400 for a header that names no revision is written in the latest.
 */
export const applyRevision: Koa.Middleware = async (ctx, next) => {
  const header = ctx.get("revision");
  const resolved = resolveRevision(header === "" ? undefined : header);
  ctx.set("revision", (resolved.ok ? resolved.revision : LATEST_REVISION).date);
  if (!resolved.ok) throw new ApiError(400, { problems: [{ message: resolved.message, path: "header.revision" }] });
  await next();
};
