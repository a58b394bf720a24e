import { LATEST_REVISION, resolveRevision } from "@cm/domain";
import type Koa from "koa";
import { ApiError } from "../errors/api-error";
import type { RevisionState } from "../state";

/**
 * decisions.md "revision": every answer names the revision applied, errors included, so this
 * runs before authentication. A header that names no revision gets the latest here, and its
 * 400 from `requireRevision`.
 */
export const nameRevision: Koa.Middleware<RevisionState> = (ctx, next) => {
  const header = ctx.get("revision");
  const resolved = resolveRevision(header === "" ? undefined : header);
  ctx.state.revision = resolved;
  ctx.set("revision", (resolved.ok ? resolved.revision : LATEST_REVISION).date);
  return next();
};

/** 400 for a revision header that names no revision; after authentication (api.md: no credential, 401). */
export const requireRevision: Koa.Middleware<RevisionState> = (ctx, next) => {
  const resolved = ctx.state.revision;
  if (!resolved.ok) throw new ApiError(400, { problems: [{ message: resolved.message, path: "header.revision" }] });
  return next();
};
