import { isUnavailable } from "@cm/db";
import { isRedisFailover, isRedisOutOfMemory } from "@cm/queue";

/**
 * What went wrong, by name: a named error's own `kind` (libs/app errors.ts, use-cases/errors.ts,
 * InvalidInput of libs/domain, the credential cache's and the micro-batcher's), or `store_unavailable` for
 * what the Postgres and Redis clients throw while their server is away, full or changing
 * primaries, which only those libs know how to recognise. Undefined for anything else.
 */
export function errorKind(error: unknown): string | undefined {
  const kind = (error as { kind?: unknown } | null | undefined)?.kind;
  if (typeof kind === "string") return kind;
  if (isUnavailable(error) || isRedisOutOfMemory(error) || isRedisFailover(error)) return "store_unavailable";
  return undefined;
}
