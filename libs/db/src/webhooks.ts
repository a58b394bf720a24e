import type { Db } from "./connect";

export type WebhookEndpointState = "active" | "parked" | "revoked";

/** An endpoint as an operator sees it (ctl webhook list): never its secrets. */
export interface WebhookEndpointSummary {
  id: string;
  projectId: number;
  url: string;
  /** Null: every type. */
  types: string[] | null;
  state: WebhookEndpointState;
  cursor: string | null;
  failingSince: Date | null;
  failedTries: number;
  lastError: string | null;
  /**
   * When the try that failed with `lastError` ended; null without one. A failure recorded before
   * migration 028 (or by a worker of an older release) shows its batch's first failure.
   */
  lastFailedAt: Date | null;
  nextTryAt: Date;
  lastDeliveredAt: Date | null;
  /** How long its last try took, answered or not (a slow one paces it); null before its first. */
  lastTryMs: number | null;
  createdAt: Date;
  stateChangedAt: Date | null;
  /** Until when the secret replaced by the last rotation still signs; null when none does. */
  previousSecretExpiresAt: Date | null;
}

const SUMMARY_COLUMNS = `id::text AS id, project_id AS "projectId", url, types, state, cursor,
  failing_since AS "failingSince", failed_tries AS "failedTries", last_error AS "lastError",
  CASE WHEN last_error IS NOT NULL THEN coalesce(last_failed_at, failing_since, created_at) END AS "lastFailedAt",
  next_try_at AS "nextTryAt", last_delivered_at AS "lastDeliveredAt", last_try_ms AS "lastTryMs",
  created_at AS "createdAt",
  state_changed_at AS "stateChangedAt",
  CASE WHEN previous_secret_expires_at > now() THEN previous_secret_expires_at END AS "previousSecretExpiresAt"`;

export async function insertWebhookEndpoint(
  sql: Db,
  endpoint: { projectId: number; url: string; types: string[] | null; secretSealed: Buffer; cursor: string | null },
): Promise<WebhookEndpointSummary> {
  // The summary read from the inserted row: on Citus, where webhook_endpoints is a table of
  // Citus's for its foreign key to projects, RETURNING may call no function but an immutable one.
  const [row] = await sql<WebhookEndpointSummary[]>`
    WITH inserted AS (
      INSERT INTO webhook_endpoints (project_id, url, types, secret_sealed, cursor)
      VALUES (${endpoint.projectId}, ${endpoint.url}, ${endpoint.types === null ? null : sql.array(endpoint.types)},
              ${endpoint.secretSealed}, ${endpoint.cursor})
      RETURNING *
    )
    SELECT ${sql.unsafe(SUMMARY_COLUMNS)} FROM inserted`;
  return row as WebhookEndpointSummary;
}

/** A project's endpoints, oldest first, revoked ones included. */
export async function listWebhookEndpoints(sql: Db, projectId: number): Promise<WebhookEndpointSummary[]> {
  return sql<WebhookEndpointSummary[]>`
    SELECT ${sql.unsafe(SUMMARY_COLUMNS)} FROM webhook_endpoints WHERE project_id = ${projectId} ORDER BY id`;
}

/** Stops deliveries to an endpoint for good; false when there is no such endpoint, or it was revoked already. */
export async function revokeWebhookEndpoint(sql: Db, id: string): Promise<boolean> {
  const rows = await sql`
    UPDATE webhook_endpoints SET state = 'revoked', state_changed_at = now()
     WHERE id = ${id} AND state <> 'revoked'
    RETURNING 1`;
  return rows.length > 0;
}

/**
 * Gives an endpoint a new secret; the one it replaces keeps signing beside it for `graceSeconds`
 * (a secret replaced earlier and still in its grace stops at once: two sign at most). Returns
 * when the replaced one stops, or null when there is no such endpoint not revoked.
 */
export async function rotateWebhookSecret(
  sql: Db,
  id: string,
  secretSealed: Buffer,
  graceSeconds: number,
): Promise<{ previousSecretExpiresAt: Date } | null> {
  const [row] = await sql<{ previousSecretExpiresAt: Date }[]>`
    UPDATE webhook_endpoints
       SET previous_secret_sealed = secret_sealed, secret_sealed = ${secretSealed},
           previous_secret_expires_at = now() + make_interval(secs => ${graceSeconds})
     WHERE id = ${id} AND state <> 'revoked'
    RETURNING previous_secret_expires_at AS "previousSecretExpiresAt"`;
  return row ?? null;
}

/** The endpoint's own project, or any when null. */
const ofProject = (sql: Db, projectId: number | null) =>
  projectId === null ? sql`` : sql`AND project_id = ${projectId}`;

/**
 * Puts a parked endpoint back to work from where it stopped (the batch it failed comes first);
 * false when there is no such endpoint parked (of the project, when one is named).
 */
export async function unparkWebhookEndpoint(sql: Db, id: string, projectId: number | null = null): Promise<boolean> {
  const rows = await sql`
    UPDATE webhook_endpoints
       SET state = 'active', state_changed_at = now(), failing_since = NULL, failed_tries = 0, next_try_at = now()
     WHERE id = ${id} AND state = 'parked' ${ofProject(sql, projectId)}
    RETURNING 1`;
  return rows.length > 0;
}

/** The endpoint's state, null when there is no such endpoint of the project. */
export async function webhookEndpointState(
  sql: Db,
  id: string,
  projectId: number,
): Promise<WebhookEndpointState | null> {
  const [row] = await sql<{ state: WebhookEndpointState }[]>`
    SELECT state FROM webhook_endpoints WHERE id = ${id} ${ofProject(sql, projectId)}`;
  return row?.state ?? null;
}

/** The active endpoints due for a try, those waiting longest first. */
export async function dueWebhookEndpoints(sql: Db, limit: number): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    SELECT id::text AS id FROM webhook_endpoints
     WHERE state = 'active' AND next_try_at <= now()
     ORDER BY next_try_at LIMIT ${limit}`;
  return rows.map((row) => row.id);
}

/** What a delivery needs of its endpoint: the secrets that sign (sealed), where it stands. */
export interface WebhookEndpointToDeliver {
  id: string;
  projectId: number;
  url: string;
  types: string[] | null;
  cursor: string | null;
  /** What says whether it is paced (libs/domain isPaced). */
  failedTries: number;
  lastTryMs: number | null;
  secretSealed: Buffer;
  /** The secret a rotation replaced, while it still signs. */
  previousSecretSealed: Buffer | null;
}

/** The endpoint, when it is active and due for a try; null otherwise. */
export async function webhookEndpointToDeliver(sql: Db, id: string): Promise<WebhookEndpointToDeliver | null> {
  const [row] = await sql<WebhookEndpointToDeliver[]>`
    SELECT id::text AS id, project_id AS "projectId", url, types, cursor, failed_tries AS "failedTries",
           last_try_ms AS "lastTryMs", secret_sealed AS "secretSealed",
           CASE WHEN previous_secret_expires_at > now() THEN previous_secret_sealed END AS "previousSecretSealed"
      FROM webhook_endpoints
     WHERE id = ${id} AND state = 'active' AND next_try_at <= now()`;
  return row ?? null;
}

/**
 * Moves an endpoint's cursor from `from` to `to` after a batch was answered 2xx, and clears its
 * failures; `tried`, when a try was made, says how long it took and how long the next one waits
 * (a slow endpoint's pace; its due time is now otherwise, so that the poll, which takes those due
 * longest first, comes to it after the endpoints served less recently). Nothing moves when the cursor is no longer `from` (another worker
 * took the job over after a stall and delivered the batch too): false then.
 */
export async function advanceWebhookCursor(
  sql: Db,
  id: string,
  from: string | null,
  to: string,
  tried: { ms: number; paceMs: number } | null = null,
): Promise<boolean> {
  const rows = await sql`
    UPDATE webhook_endpoints
       SET cursor = ${to}, failing_since = NULL, failed_tries = 0, last_error = NULL, last_failed_at = NULL,
           last_delivered_at = now(),
           last_try_ms = coalesce(${tried?.ms ?? null}::integer, last_try_ms),
           next_try_at = now() + make_interval(secs => ${tried?.paceMs ?? 0} / 1000.0)
     WHERE id = ${id} AND cursor IS NOT DISTINCT FROM ${from}
    RETURNING 1`;
  return rows.length > 0;
}

/**
 * Notes a failed try of the batch after `cursor`: the next one after the retry delay, doubled at
 * each failed try of the batch up to its maximum, or the endpoint parked when the batch has failed
 * for `parkAfterS` already. Returns the endpoint's state then, or null when it was no longer
 * active at that cursor.
 */
export async function recordWebhookFailure(
  sql: Db,
  id: string,
  cursor: string | null,
  failure: { error: string; tryMs?: number; retryBaseDelayMs: number; retryMaxDelayMs: number; parkAfterS: number },
): Promise<{ state: WebhookEndpointState } | null> {
  // Every time is worked out in `failing`: on Citus (webhook_endpoints is a table of Citus's) an
  // UPDATE may not call a stable function on a column, which now() + interval is.
  const [row] = await sql<{ state: WebhookEndpointState }[]>`
    WITH failing AS (
      SELECT id, now() AS at, coalesce(failing_since, now()) AS since,
             coalesce(failing_since, now()) <= now() - make_interval(secs => ${failure.parkAfterS}) AS parks,
             now() + make_interval(secs => least(${failure.retryMaxDelayMs},
                                                 ${failure.retryBaseDelayMs} * 2 ^ least(failed_tries, 30)) / 1000)
               AS next_try_at
        FROM webhook_endpoints
       WHERE id = ${id} AND state = 'active' AND cursor IS NOT DISTINCT FROM ${cursor}
         FOR UPDATE
    )
    UPDATE webhook_endpoints AS e
       SET failing_since = f.since, failed_tries = e.failed_tries + 1, last_error = ${failure.error},
           last_failed_at = f.at,
           last_try_ms = coalesce(${failure.tryMs ?? null}::integer, e.last_try_ms),
           next_try_at = f.next_try_at,
           state = CASE WHEN f.parks THEN 'parked' ELSE e.state END,
           state_changed_at = CASE WHEN f.parks THEN f.at ELSE e.state_changed_at END
      FROM failing AS f
     WHERE e.id = f.id
    RETURNING e.state`;
  return row ?? null;
}

/** Endpoints waiting for deliveries (a worker without WEBHOOK_SECRET_KEY says so at start). */
export async function countActiveWebhookEndpoints(sql: Db): Promise<number> {
  const [row] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM webhook_endpoints WHERE state = 'active'`;
  return row?.n ?? 0;
}
