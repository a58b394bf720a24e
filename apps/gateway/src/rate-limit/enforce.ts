import type Koa from "koa";
import { ApiError } from "../errors/api-error";
import type { RateLimiter } from "./rate-limiter";

/**
 * Takes one request from the project's limit, naming what is left in RateLimit-* headers
 * (IETF draft "RateLimit header fields for HTTP"): the limit is the bucket's quota, its burst,
 * of which what remains is a part, and the reset the seconds until the bucket is full again
 * (the time window in which the quota is whole). Past the limit, 429 with Retry-After.
 */
export async function enforceRateLimit(
  ctx: Koa.ParameterizedContext,
  limiter: RateLimiter,
  projectId: number,
): Promise<void> {
  const taken = limiter.take(projectId);
  const verdict = taken instanceof Promise ? await taken : taken;
  ctx.set("RateLimit-Limit", String(verdict.limit));
  ctx.set("RateLimit-Remaining", String(verdict.remaining));
  ctx.set("RateLimit-Reset", String(verdict.resetSeconds));
  if (!verdict.allowed) throw ApiError.tooManyRequests(verdict.resetSeconds);
}
