import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";

export interface WorkerMetrics {
  registry: Registry;
  profileOperationsBatchSeconds: Histogram;
  profileOperationsApplied: Counter;
  deadLetters: Counter;
  profileOperationsLagSeconds: Histogram;
  fanoutProfiles: Counter<"topic">;
  eventsBatchSeconds: Histogram;
  eventsStored: Counter;
  eventsSkipped: Counter;
  eventsLagSeconds: Histogram;
  jobsLeftAlone: Counter<"queue">;
  jobRetries: Counter<"queue" | "cause">;
  jobsWaitingOnRetry: Gauge<"cause">;
  webhookBatchesDelivered: Counter<"endpoint">;
  webhookChangesDelivered: Counter<"endpoint">;
  webhookFailures: Counter<"endpoint">;
  webhookEndpointsParked: Counter<"endpoint">;
  webhookLagSeconds: Gauge<"endpoint">;
  webhookDeliveriesDeferred: Counter<"share">;
}

export function createWorkerMetrics(): WorkerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  return {
    registry,
    profileOperationsBatchSeconds: new Histogram({
      name: "identify_batch_apply_seconds",
      help: "Time to apply one profile operations job (one SQL statement, more when a batch is split) to Postgres",
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    profileOperationsApplied: new Counter({
      name: "identify_events_applied_total",
      help: "Profile operations applied to Postgres",
      registers,
    }),
    deadLetters: new Counter({
      name: "identify_dead_letters_total",
      help: "Profile operations and tracked events Postgres refused, kept in identify_dead_letters",
      registers,
    }),
    profileOperationsLagSeconds: new Histogram({
      name: "identify_end_to_end_lag_seconds",
      help: "From the gateway accepting a profile operation to a worker having applied it",
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers,
    }),
    eventsBatchSeconds: new Histogram({
      name: "events_batch_store_seconds",
      help: "Time to store one events job in Postgres",
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    eventsStored: new Counter({ name: "events_stored_total", help: "Tracked events stored", registers }),
    eventsSkipped: new Counter({
      name: "events_skipped_total",
      help: "Tracked events not stored: duplicates, or erased before they were stored",
      registers,
    }),
    eventsLagSeconds: new Histogram({
      name: "events_end_to_end_lag_seconds",
      help: "From the gateway accepting an event to a worker having stored it",
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers,
    }),
    jobsLeftAlone: new Counter({
      name: "jobs_left_alone_total",
      help: "Jobs of a kind or payload version this worker does not know, or holding an operation it does not know, put back for a newer worker",
      labelNames: ["queue"],
      registers,
    }),
    jobRetries: new Counter({
      name: "job_retries_total",
      help: "Tries of a job that failed for a reason other than its input (cause: outage when Postgres was out of reach, else error), each put back to be tried again",
      labelNames: ["queue", "cause"],
      registers,
    }),
    jobsWaitingOnRetry: new Gauge({
      name: "jobs_waiting_on_retry",
      help: "Jobs this worker put back after a failed try and has not seen applied since, by the cause of their last failure",
      labelNames: ["cause"],
      registers,
    }),
    webhookBatchesDelivered: new Counter({
      name: "webhook_batches_delivered_total",
      help: "Batches of changes a webhook endpoint answered 2xx to",
      labelNames: ["endpoint"],
      registers,
    }),
    webhookChangesDelivered: new Counter({
      name: "webhook_changes_delivered_total",
      help: "Changes delivered to a webhook endpoint (in batches it answered 2xx to)",
      labelNames: ["endpoint"],
      registers,
    }),
    webhookFailures: new Counter({
      name: "webhook_delivery_failures_total",
      help: "Tries of a batch that a webhook endpoint did not answer 2xx (an error, a timeout, a redirect, an address refused)",
      labelNames: ["endpoint"],
      registers,
    }),
    webhookEndpointsParked: new Counter({
      name: "webhook_endpoints_parked_total",
      help: "Times a webhook endpoint was parked, its batch having failed for WEBHOOK_PARK_AFTER_S (ctl webhook replay resumes it)",
      labelNames: ["endpoint"],
      registers,
    }),
    webhookLagSeconds: new Gauge({
      name: "webhook_lag_seconds",
      help: "Age of the first change of the last batch tried to a webhook endpoint, 0 once it is caught up",
      labelNames: ["endpoint"],
      registers,
    }),
    webhookDeliveriesDeferred: new Counter({
      name: "webhook_deliveries_deferred_total",
      help: "Deliveries put off to the next poll, the share of this worker's slots they would take being full: their project's, or the paced endpoints'",
      labelNames: ["share"],
      registers,
    }),
    fanoutProfiles: new Counter({
      name: "topic_fanout_profiles_total",
      help: "Profiles given a topic's new default by fan-outs (progress)",
      labelNames: ["topic"],
      registers,
    }),
  };
}
