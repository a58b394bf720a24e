import type Koa from "koa";

/** What RFC 9110 says a recipient reads as these codings (section 8.4.1). */
const SAME_CODING: Record<string, string> = { "x-gzip": "gzip", "x-compress": "compress" };

/**
 * Content codings are case-insensitive (`GZIP` is gzip) and `x-gzip` is gzip: the body readers
 * know only the lower-case names, so the header is written in them before any reads it.
 */
export const normalizeContentEncoding: Koa.Middleware = (ctx, next) => {
  const given = ctx.req.headers["content-encoding"];
  if (given !== undefined) {
    const coding = given.trim().toLowerCase();
    ctx.req.headers["content-encoding"] = SAME_CODING[coding] ?? coding;
  }
  return next();
};
