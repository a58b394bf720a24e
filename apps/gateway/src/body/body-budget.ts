import { MAX_BODY_BYTES } from "@cm/domain";
import type Koa from "koa";
import { ApiError } from "../errors/api-error";

/**
 * The bytes of request bodies one gateway process reads and holds at once. Micro-batches
 * bound what is written per job, but every request in flight holds its body (raw, then
 * parsed) until its batch is written: 500 connections sending 256 KiB bodies took a gateway
 * past 900 MiB. Past the budget a request is turned away at once (503, Retry-After), before
 * its body is read, rather than risking the process.
 */
export class BodyBudget {
  private inFlight = 0;

  constructor(private readonly maxBytes: number) {}

  /** Room for `bytes` more; a request always fits when nothing else is in flight. */
  tryReserve(bytes: number): boolean {
    if (this.inFlight > 0 && this.inFlight + bytes > this.maxBytes) return false;
    this.inFlight += bytes;
    return true;
  }

  release(bytes: number): void {
    this.inFlight -= bytes;
  }
}

/** Holds the request's share of the budget until it is answered: its Content-Length, or the most a body may be. */
export function withinBodyBudget(budget: BodyBudget): Koa.Middleware {
  return async (ctx, next) => {
    const declared = Number(ctx.get("content-length"));
    const bytes = declared > 0 && declared < MAX_BODY_BYTES ? declared : MAX_BODY_BYTES;
    if (!budget.tryReserve(bytes)) {
      // Closing the connection spares reading the body only to discard it, as keeping the
      // connection open would require.
      ctx.set("Connection", "close");
      throw ApiError.unavailable(1);
    }
    try {
      await next();
    } finally {
      budget.release(bytes);
    }
  };
}
