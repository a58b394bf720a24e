/**
 * Replies of a Redis that is not the primary it was, or not yet one: demoted (READONLY), loading
 * its data after a restart (LOADING), a replica that lost its primary (MASTERDOWN), a cluster
 * missing a slot's primary or moving one (CLUSTERDOWN, TRYAGAIN, MOVED, ASK), a primary left
 * without the replicas min-replicas-to-write asks (NOREPLICAS).
 */
const FAILOVER_REPLIES = /^(READONLY|LOADING|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|MOVED|ASK|NOREPLICAS) /;

/** What ioredis rejects a command with while its connection is gone or being made again. */
const CONNECTION_LOST = [
  "Connection is closed.",
  "Stream isn't writeable",
  "Cluster isn't ready",
  "Too many Cluster redirections",
  "None of startup nodes is available",
];
const CONNECTION_LOST_ERRORS = new Set(["MaxRetriesPerRequestError", "ClusterAllFailedError"]);
const SOCKET_FAILURES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENOTFOUND"]);

/**
 * A command failed because Redis is away or changing primaries (a failover, a restart), not
 * because of the command: the same command may succeed in a moment, on the server promoted or
 * back. What a write the gateway holds through a failover is retried on (docs/operations-redis.md).
 */
export function isRedisFailover(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  return (
    FAILOVER_REPLIES.test(error.message) ||
    CONNECTION_LOST.some((start) => error.message.startsWith(start)) ||
    CONNECTION_LOST_ERRORS.has(error.name) ||
    (typeof code === "string" && SOCKET_FAILURES.has(code))
  );
}
