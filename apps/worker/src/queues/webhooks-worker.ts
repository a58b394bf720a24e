import { logThrottle, type Config } from "@cm/config";
import { connect, countActiveWebhookEndpoints, type Sql } from "@cm/db";
import {
  WEBHOOK_DELIVERY_KIND,
  WEBHOOK_POLL_JOB,
  WEBHOOK_POLL_KIND,
  scheduleWebhookPoll,
  webhooksQueue,
  type WebhookDeliveryJobData,
  type RedisConnection,
  type WebhookPollJobData,
} from "@cm/queue";
import type { Job, Worker } from "bullmq";
import type { Logger } from "pino";
import { DeliverySlots, deliverToWebhook, queueWebhookDeliveries, type WebhookDelivery } from "@cm/app";
import { deliveryShares } from "@cm/domain";
import type { WorkerMetrics } from "../metrics";
import type { CreateQueueWorker } from "./create-queue-worker";
import { forKnownKind } from "./known-kind";

export interface WebhooksWorker {
  close(): Promise<void>;
}

/** A worker that could not declare the poll's schedule at start (Redis full, say) tries again this often. */
const DECLARE_RETRY_MS = 60_000;

/**
 * Delivers changes to webhook endpoints (docs/webhooks.md): a poll, on a schedule every worker
 * declares, queues a job per endpoint due, and each job delivers that endpoint's batches in order,
 * in one of this worker's slots, when its project's share of them (and the paced endpoints', for
 * a slow or failing one) has one free.
 * Its queries run on a pool of their own, so that no delivery holds a connection an apply waits
 * for. Without WEBHOOK_SECRET_KEY nothing is delivered (the secrets cannot be opened): said at
 * start when endpoints are waiting.
 */
export async function webhooksWorker(
  createQueueWorker: CreateQueueWorker,
  config: Config,
  connection: RedisConnection,
  logger: Logger,
  metrics: WorkerMetrics,
  onLeftAlone: (kind: unknown, v: unknown) => void,
): Promise<WebhooksWorker> {
  const sql: Sql = connect(config.databaseUrl, { max: 2, applicationName: "cm-worker-webhooks" });
  const { secretKey, ...settings } = config.webhooks;
  if (secretKey === undefined) {
    const waiting = await countActiveWebhookEndpoints(sql).catch(() => 0);
    if (waiting > 0)
      logger.warn({ endpoints: waiting }, "WEBHOOK_SECRET_KEY is not set: no webhook endpoint is delivered to");
    return { close: () => sql.end({ timeout: 5 }) };
  }
  const deps = {
    sql,
    secretKey: Buffer.from(secretKey, "base64"),
    slots: new DeliverySlots(deliveryShares(settings.concurrency)),
  };
  const queue = webhooksQueue(connection, config.queuePrefix);
  const logError = logThrottle(10);
  queue.on("error", (error) =>
    logError((suppressed) => logger.warn({ err: error.message, suppressed }, "webhooks queue error")),
  );
  const declare = () =>
    scheduleWebhookPoll(queue, settings.pollMs).then(
      () => true,
      (error: unknown) => {
        logger.warn(
          { err: error instanceof Error ? error.message : String(error) },
          "webhook poll schedule not declared; trying again later",
        );
        return false;
      },
    );
  const retry = (await declare())
    ? null
    : setInterval(() => void declare().then((done) => done && retry && clearInterval(retry)), DECLARE_RETRY_MS);
  retry?.unref();

  const logFailure = logThrottle(10);
  const counted = (endpoint: string, delivery: WebhookDelivery) => {
    if (delivery.state === "not_due") return;
    if (delivery.state === "deferred") {
      metrics.webhookDeliveriesDeferred.inc({ share: delivery.share });
      return;
    }
    metrics.webhookBatchesDelivered.inc({ endpoint }, delivery.batches);
    metrics.webhookChangesDelivered.inc({ endpoint }, delivery.changes);
    metrics.webhookLagSeconds.set({ endpoint }, delivery.lagSeconds);
    if (delivery.state === "delivered") return;
    metrics.webhookFailures.inc({ endpoint });
    if (delivery.state === "parked") {
      metrics.webhookEndpointsParked.inc({ endpoint });
      logger.warn({ endpoint, error: delivery.error }, "webhook endpoint parked: ctl webhook replay resumes it");
    } else {
      // The endpoint's id and the failure in words: never its URL (it may hold a token), a secret or a change.
      logFailure((suppressed) =>
        logger.info({ endpoint, error: delivery.error, suppressed }, "webhook batch failed, to be tried again"),
      );
    }
  };
  const poll = forKnownKind([WEBHOOK_POLL_KIND], false, () => queueWebhookDeliveries(sql, queue), onLeftAlone);
  const deliver = forKnownKind(
    [WEBHOOK_DELIVERY_KIND],
    false,
    async (job: Job<WebhookDeliveryJobData>) => {
      const delivery = await deliverToWebhook(deps, settings, job.data.endpointId, () => worker.closing !== undefined);
      counted(job.data.endpointId, delivery);
      return delivery;
    },
    onLeftAlone,
  );
  const worker: Worker<WebhookDeliveryJobData | WebhookPollJobData> = createQueueWorker(
    queue.name,
    (job, token) =>
      job.name === WEBHOOK_POLL_JOB
        ? poll(job as Job<WebhookPollJobData>, token)
        : deliver(job as Job<WebhookDeliveryJobData>, token),
    { concurrency: settings.concurrency, heldUnderWorkerLock: true },
  );
  return {
    async close() {
      if (retry) clearInterval(retry);
      await worker.close();
      await queue.close();
      await sql.end({ timeout: 5 });
    },
  };
}
