import { Queue, type JobsOptions } from "bullmq";
import { RETRY_FOREVER } from "./batch-queues";
import { WEBHOOK_DELIVERY_JOB, WEBHOOK_POLL_JOB, WEBHOOKS_QUEUE, queueName } from "./names";
import { isCluster, type RedisConnection } from "./redis-nodes";

/** Webhook jobs name their kind and payload version, as every job does (payloads.ts). */
export const WEBHOOK_DELIVERY_KIND = { kind: "webhook-delivery", v: 1 } as const;
export const WEBHOOK_POLL_KIND = { kind: "webhook-poll", v: 1 } as const;

/** Deliver what an endpoint has waiting; the job holds no change: they are read from the feed. */
export interface WebhookDeliveryJobData {
  kind: (typeof WEBHOOK_DELIVERY_KIND)["kind"];
  v: (typeof WEBHOOK_DELIVERY_KIND)["v"];
  endpointId: string;
}

export type WebhookPollJobData = typeof WEBHOOK_POLL_KIND;

/**
 * A delivery job is named by its endpoint (`webhook-<id>`): while one waits or runs, queuing
 * another for the endpoint does nothing, so an endpoint is delivered to one batch at a time, in
 * order. It is removed once done, so that the next poll can queue the endpoint again; what it
 * did is in the endpoint's row (ctl webhook list) and the worker's metrics. A try that fails for
 * a reason of ours (Postgres out of reach) is tried again as every job is (retryUntilApplied);
 * an endpoint's failures are the endpoint's, kept in its row, and end the job.
 */
export const WEBHOOK_JOB_OPTIONS: JobsOptions = {
  attempts: RETRY_FOREVER,
  backoff: { type: "capped-exponential", delay: 500 },
  removeOnComplete: true,
  removeOnFail: true,
};

export function webhooksQueue(
  connection: RedisConnection,
  prefix: string,
): Queue<WebhookDeliveryJobData | WebhookPollJobData> {
  return new Queue(queueName(WEBHOOKS_QUEUE, isCluster(connection)), {
    connection,
    prefix,
    defaultJobOptions: WEBHOOK_JOB_OPTIONS,
  });
}

export const webhookDeliveryJobId = (endpointId: string) => `webhook-${endpointId}`;

/** Queues a delivery for each endpoint that has none waiting or running. */
export async function addWebhookDeliveries(
  queue: Queue<WebhookDeliveryJobData | WebhookPollJobData>,
  endpointIds: readonly string[],
): Promise<void> {
  await queue.addBulk(
    endpointIds.map((endpointId) => ({
      name: WEBHOOK_DELIVERY_JOB,
      data: { ...WEBHOOK_DELIVERY_KIND, endpointId },
      opts: { ...WEBHOOK_JOB_OPTIONS, jobId: webhookDeliveryJobId(endpointId) },
    })),
  );
}

/** Declares the poll's schedule; every worker does at start, and upserting it is idempotent. */
export async function scheduleWebhookPoll(
  queue: Queue<WebhookDeliveryJobData | WebhookPollJobData>,
  everyMs: number,
): Promise<void> {
  await queue.upsertJobScheduler(
    WEBHOOK_POLL_JOB,
    { every: everyMs },
    { name: WEBHOOK_POLL_JOB, data: { ...WEBHOOK_POLL_KIND }, opts: { removeOnComplete: true, removeOnFail: 100 } },
  );
}
