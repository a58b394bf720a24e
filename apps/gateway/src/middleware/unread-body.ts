import type Koa from "koa";

/**
 * A request answered before its body was read to the end (refused past its size limit after
 * inflating, or past its deadline) leaves the rest of that body on the connection, where the next
 * request would wait behind it until the request timeout. Such a connection is closed once
 * answered; what the client still sends is read and dropped meanwhile, so that closing does not
 * reset the connection before the client has read its answer.
 */
export const closeAfterUnreadBody: Koa.Middleware = async (ctx, next) => {
  await next();
  const request = ctx.req;
  if (request.complete || request.readableEnded) return;
  ctx.set("Connection", "close");
  request.unpipe();
  request.resume();
};
