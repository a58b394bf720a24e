import type Koa from "koa";

/**
 * On every answer: browsers take its Content-Type as it is, never sniffing a JSON answer (which
 * may echo what a client sent) into a page or a script, and no site frames our pages (/docs, the
 * queue dashboard) to have them clicked unseen.
 */
export const securityHeaders: Koa.Middleware = (ctx, next) => {
  ctx.set("X-Content-Type-Options", "nosniff");
  ctx.set("X-Frame-Options", "DENY");
  return next();
};

/**
 * What /docs may load, all from the gateway itself: Swagger UI's script and style (its React
 * sets inline styles, and its icons are data: images), the OpenAPI document and the console's
 * calls; nothing else, no plugin, no frame around it.
 */
export const DOCS_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");
