import { createHash } from "node:crypto";
import {
  advanceWebhookCursor,
  recordWebhookFailure,
  webhookEndpointToDeliver,
  type Sql,
  type WebhookEndpointToDeliver,
} from "@cm/db";
import { isPaced, openSecret, paceAfterTry, webhookSignature, type ChangeType } from "@cm/domain";
import { readChangeFeed } from "../changes/read-change-feed";
import { ChangesTrimmed } from "../errors";
import type { DeliverySlots, FullShare } from "./delivery-slots";
import { postWebhook, type WebhookPostSettings } from "./post-webhook";

export interface WebhookDeliveryDeps {
  sql: Sql;
  /** WEBHOOK_SECRET_KEY's bytes: the endpoints' signing secrets are sealed under it. */
  secretKey: Buffer;
  /** The worker's slots, shared out between projects and paced endpoints. */
  slots: DeliverySlots;
}

export interface WebhookDeliverySettings extends WebhookPostSettings {
  batchSize: number;
  retryBaseDelayMs: number;
  retryMaxDelayMs: number;
  parkAfterS: number;
}

/**
 * What one delivery job did: `not_due` when the endpoint was not active or not due; `deferred`
 * when the share its slot would come from was full (it is queued again at the next poll);
 * otherwise the batches and changes delivered, and `lagSeconds`, the age of the first change of
 * the last batch tried (0 once caught up). A failed batch says why in `error`, and whether it
 * parked the endpoint.
 */
export type WebhookDelivery =
  | { state: "not_due" }
  | { state: "deferred"; share: FullShare }
  | { state: "delivered"; batches: number; changes: number; lagSeconds: number }
  | { state: "failed" | "parked"; batches: number; changes: number; lagSeconds: number; error: string };

/** Reads of the feed one job makes at most: an endpoint with a backlog hands its worker slot to the others in turn. */
const READS_PER_JOB = 10;

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
 *
 * It runs in one of the worker's slots (DeliverySlots), or not at all when its project's share,
 * or the paced endpoints' when it is paced, is full; and a slow answer ends it, its endpoint's
 * next try put off (paceAfterTry), so that a slow endpoint holds no slot while it waits.
 *
 * The feed is read with the endpoint's cursor as a reader of `GET /api/v2/changes` would
 * (readChangeFeed): the endpoint gets exactly the changes, and the page, that reader gets.
 */
export async function deliverToWebhook(
  deps: WebhookDeliveryDeps,
  settings: WebhookDeliverySettings,
  endpointId: string,
  stopping: () => boolean = () => false,
): Promise<WebhookDelivery> {
  const due = await webhookEndpointToDeliver(deps.sql, endpointId);
  if (due === null) return { state: "not_due" };
  const slot = deps.slots.take(due.projectId, isPaced(due));
  if ("full" in slot) return { state: "deferred", share: slot.full };
  try {
    return await deliverBatches(deps, settings, due, stopping);
  } finally {
    slot.release();
  }
}

async function deliverBatches(
  deps: WebhookDeliveryDeps,
  settings: WebhookDeliverySettings,
  due: WebhookEndpointToDeliver,
  stopping: () => boolean,
): Promise<WebhookDelivery> {
  let batches = 0;
  let changes = 0;
  let lagSeconds = 0;
  for (let reads = 0; reads < READS_PER_JOB && !stopping(); reads += 1) {
    // Read again for each batch: a rotation's end, a revocation or a parking made while this job
    // runs holds from its next batch on.
    const endpoint = reads === 0 ? due : await webhookEndpointToDeliver(deps.sql, due.id);
    if (endpoint === null) return { state: "delivered", batches, changes, lagSeconds };
    const secrets = [endpoint.secretSealed, endpoint.previousSecretSealed]
      .filter((sealed) => sealed !== null)
      .map((sealed) => openSecret(deps.secretKey, sealed));
    const cursor = endpoint.cursor;
    let page;
    try {
      page = await readChangeFeed(deps, endpoint.projectId, {
        after: cursor,
        limit: settings.batchSize,
        types: endpoint.types as ChangeType[] | null,
      });
    } catch (error) {
      if (!(error instanceof ChangesTrimmed)) throw error;
      // Retention removed changes it never took: no later try can deliver them, so it is parked at once.
      await recordWebhookFailure(deps.sql, endpoint.id, cursor, { error: error.message, ...settings, parkAfterS: 0 });
      return { state: "parked", batches, changes, lagSeconds, error: error.message };
    }
    const first = page.changes[0];
    if (first === undefined) {
      // Caught up. A filtered read may have gone through changes of other types only: the cursor
      // moves past them, so that no read goes through them again. An unfiltered one has nothing
      // to move past (its cursor would only follow the read horizon, a write at every poll).
      if (endpoint.types === null || page.next === cursor)
        return { state: "delivered", batches, changes, lagSeconds: 0 };
      if (!(await advanceWebhookCursor(deps.sql, endpoint.id, cursor, page.next)))
        return { state: "delivered", batches, changes, lagSeconds };
      continue;
    }
    lagSeconds = Math.max(0, (Date.now() - Date.parse(first.applied_at)) / 1000);
    const body = JSON.stringify(page);
    const id = messageId(endpoint.id, cursor, page.next);
    const timestampS = Math.floor(Date.now() / 1000);
    const started = performance.now();
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
    const tryMs = Math.round(performance.now() - started);
    if (!("status" in answer && answer.status >= 200 && answer.status < 300)) {
      const error = "status" in answer ? failureText(answer.status) : answer.error;
      const recorded = await recordWebhookFailure(deps.sql, endpoint.id, cursor, { error, tryMs, ...settings });
      return { state: recorded?.state === "parked" ? "parked" : "failed", batches, changes, lagSeconds, error };
    }
    const paceMs = paceAfterTry(tryMs);
    // Not moved: another worker took the job over after a stall and delivered from there.
    if (!(await advanceWebhookCursor(deps.sql, endpoint.id, cursor, page.next, { ms: tryMs, paceMs })))
      return { state: "delivered", batches, changes, lagSeconds };
    batches += 1;
    changes += page.changes.length;
    if (paceMs > 0) break;
  }
  return { state: "delivered", batches, changes, lagSeconds };
}
