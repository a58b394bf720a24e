import {
  listWebhookEndpoints,
  projectExists,
  unparkWebhookEndpoint,
  webhookEndpointState,
  type WebhookEndpointSummary,
} from "@cm/db";
import { shownWebhookUrl, type ChangeType, type Webhook, type WebhookList } from "@cm/domain";
import { readChangeFeed } from "../changes/read-change-feed";
import type { Store } from "../deps";
import { ChangesTrimmed, NotFound, WebhookNotParked } from "../errors";

/** An endpoint and how far it trails the feed. */
export interface WebhookStanding {
  endpoint: WebhookEndpointSummary;
  /** The age in seconds of the first change after its cursor, 0 when none; null when revoked. */
  lagSeconds: number | null;
}

/** The applied time of the first change after `after`, of any type: a filtered endpoint's cursor moves past the others too. */
async function firstChangeAfter(deps: Store, projectId: number, after: string | null): Promise<string | undefined> {
  const read = async (from: string | null) =>
    (await readChangeFeed(deps, projectId, { after: from, limit: 1, types: null })).changes[0]?.applied_at;
  try {
    return await read(after);
  } catch (error) {
    if (!(error instanceof ChangesTrimmed)) throw error;
    // Retention passed its cursor (the worker parks it): it trails at least the oldest change kept.
    return read(null);
  }
}

async function lagOf(deps: Store, endpoint: WebhookEndpointSummary, now: number): Promise<number | null> {
  if (endpoint.state === "revoked") return null;
  const applied = await firstChangeAfter(deps, endpoint.projectId, endpoint.cursor);
  return applied === undefined ? 0 : Math.max(0, (now - Date.parse(applied)) / 1000);
}

/**
 * The project's endpoints, oldest first, revoked ones included, each with its lag: one read of
 * the feed's first change after its cursor (an index's first row), one endpoint after another.
 */
export async function webhookStandings(deps: Store, projectId: number): Promise<WebhookStanding[]> {
  if (!(await projectExists(deps.sql, projectId))) throw new NotFound(`project ${projectId}`);
  const now = Date.now();
  const standings: WebhookStanding[] = [];
  for (const endpoint of await listWebhookEndpoints(deps.sql, projectId)) {
    standings.push({ endpoint, lagSeconds: await lagOf(deps, endpoint, now) });
  }
  return standings;
}

function webhookResource({ endpoint, lagSeconds }: WebhookStanding): Webhook {
  return {
    id: endpoint.id,
    url: shownWebhookUrl(endpoint.url),
    types: endpoint.types as ChangeType[] | null,
    state: endpoint.state,
    state_changed_at: endpoint.stateChangedAt?.toISOString() ?? null,
    lag_seconds: lagSeconds,
    last_failure:
      endpoint.lastError === null || endpoint.lastFailedAt === null
        ? null
        : {
            at: endpoint.lastFailedAt.toISOString(),
            error: endpoint.lastError,
            failing_since: endpoint.failingSince?.toISOString() ?? null,
            failed_tries: endpoint.failedTries,
          },
    last_delivered_at: endpoint.lastDeliveredAt?.toISOString() ?? null,
    next_try_at: endpoint.nextTryAt.toISOString(),
    previous_secret_signs_until: endpoint.previousSecretExpiresAt?.toISOString() ?? null,
    created_at: endpoint.createdAt.toISOString(),
  };
}

/** `GET /api/v2/webhooks`: the project's endpoints as the API shows them (no secret, the URL's query values hidden). */
export async function listWebhooks(deps: Store, projectId: number): Promise<WebhookList> {
  return { data: (await webhookStandings(deps, projectId)).map(webhookResource) };
}

/**
 * Puts a parked endpoint back to work, from the batch it failed. NotFound when there is no such
 * endpoint (of the project, when one is named), WebhookNotParked when it is not parked.
 */
export async function replayWebhook(deps: Store, target: { id: string; projectId: number | null }): Promise<void> {
  if (await unparkWebhookEndpoint(deps.sql, target.id, target.projectId)) return;
  const state = target.projectId === null ? null : await webhookEndpointState(deps.sql, target.id, target.projectId);
  if (state === null) throw new NotFound(`webhook endpoint ${target.id}`);
  throw new WebhookNotParked(state);
}
