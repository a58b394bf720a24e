import { RefusedInput } from "@cm/domain";
import postgres from "postgres";

const CONNECTION_FAILURES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
]);

/** Postgres's code for an insert that breaks a unique index. */
export const UNIQUE_VIOLATION = "23505";

/** Postgres cannot be reached or refuses work for now (down, restarting, out of connections). */
export function isUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && (CONNECTION_FAILURES.has(code) || /^(08|53|57P)/.test(code));
}

/**
 * Retrying cannot help, and the input is why: Postgres refused a value of it (a data exception,
 * a broken constraint, a value past one of its limits), or a worker's check of the queued item
 * refused it (RefusedInput). Every other error says nothing against the input (an outage, a
 * timeout, a serialization failure, a bug of ours): its job is retried until it is applied.
 */
export function isRefusedInput(error: unknown): boolean {
  if (error instanceof postgres.PostgresError) return /^(22|23|54)/.test(error.code);
  return error instanceof RefusedInput;
}

/** What refused an item, as dead letters keep it: a Postgres error code, or the error's class. */
export function errorKind(error: unknown): string {
  if (error instanceof postgres.PostgresError) return error.code;
  return error instanceof Error ? error.name : "unknown";
}
