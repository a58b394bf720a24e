import { createWebhookEndpoint, NotFound, replayWebhook, rotateWebhookSigningSecret, webhookStandings } from "@cm/app";
import { revokeWebhookEndpoint, type Sql, type WebhookEndpointSummary } from "@cm/db";
import { InvalidInput } from "@cm/domain";
import { CliError } from "../cli-error";

/** An endpoint as the ctl prints it: never a secret. */
function webhookLine(endpoint: WebhookEndpointSummary) {
  return {
    id: endpoint.id,
    project_id: endpoint.projectId,
    url: endpoint.url,
    types: endpoint.types,
    state: endpoint.state,
    cursor: endpoint.cursor,
    failing_since: endpoint.failingSince?.toISOString() ?? null,
    failed_tries: endpoint.failedTries,
    last_error: endpoint.lastError,
    last_failed_at: endpoint.lastFailedAt?.toISOString() ?? null,
    next_try_at: endpoint.nextTryAt.toISOString(),
    last_delivered_at: endpoint.lastDeliveredAt?.toISOString() ?? null,
    last_try_ms: endpoint.lastTryMs,
    created_at: endpoint.createdAt.toISOString(),
    state_changed_at: endpoint.stateChangedAt?.toISOString() ?? null,
    previous_secret_signs_until: endpoint.previousSecretExpiresAt?.toISOString() ?? null,
  };
}

/** WEBHOOK_SECRET_KEY's bytes: a signing secret is sealed under it as it is made. */
function secretKeyOf(secretKey: string | undefined): Buffer {
  if (secretKey === undefined)
    throw new CliError(
      "WEBHOOK_SECRET_KEY (or WEBHOOK_SECRET_KEY_FILE) is not set: signing secrets are stored sealed under it (docs/webhooks.md)",
    );
  return Buffer.from(secretKey, "base64");
}

/** `--types a,b`: the change types delivered; none given, every type. */
export function parseWebhookTypes(text: string | undefined): string[] | null {
  if (text === undefined) return null;
  return [...new Set(text.split(",").map((type) => type.trim()))].filter((type) => type !== "");
}

/**
 * `webhook create`: the endpoint and its signing secret, which is shown this once. Its host is
 * checked under this process's WEBHOOK_ALLOW_PRIVATE_NETWORKS, which should be the workers'.
 */
export async function createWebhookCommand(
  sql: Sql,
  settings: { secretKey?: string | undefined; allowPrivateNetworks: boolean },
  input: { projectId: number; url: string; types: string[] | null },
) {
  try {
    const { endpoint, secret } = await createWebhookEndpoint(
      { sql, secretKey: secretKeyOf(settings.secretKey), allowPrivateNetworks: settings.allowPrivateNetworks },
      input.projectId,
      input,
    );
    return { webhook: webhookLine(endpoint), secret };
  } catch (error) {
    if (error instanceof InvalidInput) throw new CliError(error.message, 2);
    if (error instanceof NotFound) throw new CliError(`project ${input.projectId} does not exist`);
    throw error;
  }
}

/** `webhook list`: the project's endpoints, where each stands and how far it trails the feed, revoked ones included. */
export async function listWebhooksCommand(sql: Sql, projectId: number) {
  try {
    const standings = await webhookStandings({ sql }, projectId);
    return {
      webhooks: standings.map(({ endpoint, lagSeconds }) => ({ ...webhookLine(endpoint), lag_seconds: lagSeconds })),
    };
  } catch (error) {
    if (error instanceof NotFound) throw new CliError(`project ${projectId} does not exist`);
    throw error;
  }
}

/** `webhook revoke`: nothing more is delivered to it (a batch being sent ends as it ends). */
export async function revokeWebhookCommand(sql: Sql, id: string) {
  if (!(await revokeWebhookEndpoint(sql, id))) throw new CliError(`no webhook endpoint ${id} not revoked already`);
  return { revoked: id };
}

/** `webhook rotate-secret`: a new secret, shown this once; the old one signs too for `graceSeconds`. */
export async function rotateWebhookSecretCommand(
  sql: Sql,
  secretKey: string | undefined,
  id: string,
  graceSeconds: number,
) {
  try {
    const rotated = await rotateWebhookSigningSecret({ sql, secretKey: secretKeyOf(secretKey) }, id, graceSeconds);
    return { id, secret: rotated.secret, previous_secret_signs_until: rotated.previousSecretExpiresAt.toISOString() };
  } catch (error) {
    if (error instanceof NotFound) throw new CliError(`no webhook endpoint ${id} not revoked`);
    throw error;
  }
}

/** `webhook replay`: a parked endpoint delivered to again, from the batch it failed. */
export async function replayWebhookCommand(sql: Sql, id: string) {
  try {
    await replayWebhook({ sql }, { id, projectId: null });
  } catch (error) {
    if (error instanceof NotFound) throw new CliError(`no parked webhook endpoint ${id}`);
    throw error;
  }
  return { replayed: id };
}
