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

/** Postgres cannot be reached or refuses work for now (down, restarting, out of connections). */
export function isUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && (CONNECTION_FAILURES.has(code) || /^(08|53|57P)/.test(code));
}

/**
 * Retrying cannot help, and the input is why: Postgres refused a value of it (a row breaks a
 * constraint, a value is malformed), or our own code failed on it before Postgres saw it (a
 * nesting deep enough to overflow the stack, a field of the wrong shape in a queued job).
 * Postgres's other errors and connection errors say nothing about the input: retry those.
 */
export function isRefusedInput(error: unknown): boolean {
  if (error instanceof postgres.PostgresError) return /^(22|23)/.test(error.code);
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code !== "string";
}
