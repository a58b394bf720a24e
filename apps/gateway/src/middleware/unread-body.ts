import type Koa from "koa";

/** The most of a refused body read and dropped to keep its connection, and for how long. */
const DRAIN_MAX_BYTES = 16 * 2 ** 20;
const DRAIN_MAX_MS = 5_000;

/**
 * A request answered before its body was read to the end (refused past its size limit, before
 * or after inflating it) leaves the rest of that body on the connection. Closing the connection
 * under a client still sending makes it see a broken pipe instead of the answer (and an SDK then
 * retries what it should drop); leaving the bytes there makes the next request wait behind them
 * until the request timeout. So the rest is read and dropped, and the connection kept, up to
 * DRAIN_MAX_BYTES and DRAIN_MAX_MS; past either it is cut. An answer that closes the connection
 * itself (a bad credential's) is left to do so.
 */
export const drainUnreadBody: Koa.Middleware = async (ctx, next) => {
  await next();
  const request = ctx.req;
  if (request.complete || request.readableEnded) return;
  request.unpipe();
  // Koa's typing says a string; an unset header is undefined.
  const closing = /^close$/i.test(String(ctx.response.get("Connection")));
  if (closing || Number(ctx.get("content-length")) > DRAIN_MAX_BYTES) {
    ctx.set("Connection", "close");
    request.resume();
    return;
  }
  let drained = 0;
  const cut = () => request.socket.destroy();
  const timer = setTimeout(cut, DRAIN_MAX_MS);
  request.on("data", (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > DRAIN_MAX_BYTES) cut();
  });
  request.once("close", () => clearTimeout(timer));
  request.resume();
};
