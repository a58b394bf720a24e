import { createHash } from "node:crypto";
import {
  advanceWebhookCursor,
  readChanges,
  recordWebhookFailure,
  webhookEndpointToDeliver,
  type ChangePosition,
  type Sql,
  type StoredChange,
} from "@cm/db";
import { openSecret, webhookSignature } from "@cm/domain";
import { postWebhook, type WebhookPostSettings } from "./post-webhook";

/** A page of the project's changes after `after`, as the feed serves it. */
async function feedPage(
  sql: Sql,
  projectId: number,
  after: string | null,
  types: string[] | null,
  limit: number,
): Promise<{ changes: StoredChange[]; next: string | null }> {
  const read = await readChanges(
    sql,
    projectId,
    after === null ? null : (JSON.parse(after) as ChangePosition),
    limit,
    types,
  );
  return { changes: read.changes, next: read.last === null ? after : JSON.stringify(read.last) };
}

export interface WebhookDeliveryDeps {
  sql: Sql;
  /** WEBHOOK_SECRET_KEY's bytes: the endpoints' signing secrets are sealed under it. */
  secretKey: Buffer;
}

export interface WebhookDeliverySettings extends WebhookPostSettings {
  batchSize: number;
  retryBaseDelayMs: number;
  retryMaxDelayMs: number;
  parkAfterS: number;
}

/**
 * What one delivery job did: `not_due` when the endpoint was not active or not due; otherwise the
 * batches and changes delivered, and `lagSeconds`, the age of the first change of the last batch
 * tried (0 once caught up). A failed batch says why in `error`, and whether it parked the endpoint.
 */
export type WebhookDelivery =
  | { state: "not_due" }
  | { state: "delivered"; batches: number; changes: number; lagSeconds: number }
  | { state: "failed" | "parked"; batches: number; changes: number; lagSeconds: number; error: string };

/** Batches one job delivers at most: an endpoint with a backlog hands its worker slot to the others in turn. */
const BATCHES_PER_JOB = 10;

/**
 * The message id of a batch (Standard Webhooks' webhook-id): the same for every try of the same
 * batch, so a receiver can drop a batch it already took; a batch that grew between two tries
 * (more changes came) is another message, whose changes the receiver tells apart by position.
 */
function messageId(endpointId: string, after: string | null, next: string): string {
  return `msg_${createHash("sha256")
    .update(`${endpointId}\n${after ?? ""}\n${next}`)
    .digest("base64url")
    .slice(0, 32)}`;
}

const failureText = (status: number) =>
  status >= 300 && status < 400 ? `answered ${status} (redirects are not followed)` : `answered ${status}`;

/**
 * Delivers what an endpoint has waiting, a batch at a time in the feed's order: each batch is
 * read from the feed after the endpoint's cursor, exactly as the feed serves it, POSTed signed,
 * and the cursor moved past it only once the endpoint answered 2xx. A failed batch is tried again
 * later, the same changes first (docs/webhooks.md). `stopping`, asked between batches: whether the
 * worker is closing (the next poll's job goes on from the cursor).
 */
export async function deliverToWebhook(
  deps: WebhookDeliveryDeps,
  settings: WebhookDeliverySettings,
  endpointId: string,
  stopping: () => boolean = () => false,
): Promise<WebhookDelivery> {
  const endpoint = await webhookEndpointToDeliver(deps.sql, endpointId);
  if (endpoint === null) return { state: "not_due" };
  const secrets = [endpoint.secretSealed, endpoint.previousSecretSealed]
    .filter((sealed) => sealed !== null)
    .map((sealed) => openSecret(deps.secretKey, sealed));
  let cursor = endpoint.cursor;
  let batches = 0;
  let changes = 0;
  for (;;) {
    const page = await feedPage(deps.sql, endpoint.projectId, cursor, endpoint.types, settings.batchSize);
    const first = page.changes[0];
    if (first === undefined || page.next === null) {
      // Changes read but none served (their events erased since): the cursor moves past them all the same.
      const next = page.next;
      if (next !== null && next !== cursor && (await advanceWebhookCursor(deps.sql, endpoint.id, cursor, next))) {
        cursor = next;
        continue;
      }
      return { state: "delivered", batches, changes, lagSeconds: 0 };
    }
    const lagSeconds = Math.max(0, (Date.now() - first.appliedAt.getTime()) / 1000);
    const body = JSON.stringify(page);
    const id = messageId(endpoint.id, cursor, page.next);
    const timestampS = Math.floor(Date.now() / 1000);
    const answer = await postWebhook(
      endpoint.url,
      {
        "content-type": "application/json",
        "user-agent": "cm-webhooks/1",
        "webhook-id": id,
        "webhook-timestamp": String(timestampS),
        "webhook-signature": webhookSignature(secrets, id, timestampS, body),
      },
      body,
      settings,
    );
    if ("status" in answer && answer.status >= 200 && answer.status < 300) {
      // Not moved: another worker took the job over after a stall and delivered from there.
      if (!(await advanceWebhookCursor(deps.sql, endpoint.id, cursor, page.next)))
        return { state: "delivered", batches, changes, lagSeconds };
      cursor = page.next;
      batches += 1;
      changes += page.changes.length;
      if (page.changes.length < settings.batchSize) return { state: "delivered", batches, changes, lagSeconds: 0 };
      if (batches >= BATCHES_PER_JOB || stopping()) return { state: "delivered", batches, changes, lagSeconds };
      continue;
    }
    const error = "status" in answer ? failureText(answer.status) : answer.error;
    const recorded = await recordWebhookFailure(deps.sql, endpoint.id, cursor, { error, ...settings });
    return { state: recorded?.state === "parked" ? "parked" : "failed", batches, changes, lagSeconds, error };
  }
}
