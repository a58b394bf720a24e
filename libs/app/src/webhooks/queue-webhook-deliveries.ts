import { dueWebhookEndpoints, type Sql } from "@cm/db";
import { addWebhookDeliveries } from "@cm/queue";

/** The webhooks queue (libs/queue webhook-queue.ts). */
export type WebhooksQueue = Parameters<typeof addWebhookDeliveries>[0];

/** Endpoints one poll queues at most; the rest, due longest, come first at the next. */
const ENDPOINTS_PER_POLL = 10_000;

/**
 * The poll: a delivery job for each active endpoint due for a try (one already waiting or
 * running is left as it is). Returns how many endpoints were due.
 */
export async function queueWebhookDeliveries(sql: Sql, queue: WebhooksQueue): Promise<number> {
  const due = await dueWebhookEndpoints(sql, ENDPOINTS_PER_POLL);
  if (due.length > 0) await addWebhookDeliveries(queue, due);
  return due.length;
}
