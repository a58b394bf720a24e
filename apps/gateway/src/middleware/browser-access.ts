import type Koa from "koa";

/**
 * Vero's browser SDK (@getvero/tracking) calls the identify API from web pages, with its
 * tracking key in the URL: a public credential, and no cookie. So any origin may call it, and a
 * preflight is answered here. Server-side integrations send no Origin and get no extra header.
 */
export const allowAnyOrigin: Koa.Middleware = async (ctx, next) => {
  if (ctx.get("origin") !== "") ctx.set("Access-Control-Allow-Origin", "*");
  await next();
};

export const answerPreflight: Koa.Middleware = (ctx) => {
  ctx.set("Access-Control-Allow-Origin", "*");
  ctx.set("Access-Control-Allow-Methods", "POST, PUT, DELETE, OPTIONS");
  ctx.set("Access-Control-Allow-Headers", ctx.get("access-control-request-headers") || "Content-Type, Accept");
  ctx.set("Access-Control-Max-Age", "86400");
  ctx.status = 204;
};
