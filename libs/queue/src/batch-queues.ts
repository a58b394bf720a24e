import type { ProfileOperation, TrackedEvent } from "@cm/domain";
import { Queue, type Job, type JobsOptions } from "bullmq";
import type { Redis } from "ioredis";
import { replicasAcknowledged } from "./replica-acknowledgement";
import { EVENTS_JOB, EVENTS_QUEUE, PROFILE_OPERATIONS_JOB, PROFILE_OPERATIONS_QUEUE } from "./names";
import {
  batchItems,
  eventsJobData,
  profileOperationsJobData,
  withBatchItems,
  type BatchJobData,
  type EventsJobData,
  type ProfileOperationsJobData,
} from "./payloads";

/**
 * A job is tried until it is applied: the workers put a failed try back with a capped backoff
 * themselves (retryUntilApplied), which no attempt count limits. BullMQ's own retries are left for
 * a try whose failure the worker could not even record (Redis gone too): they never run out either.
 */
export const RETRY_FOREVER = Number.MAX_SAFE_INTEGER;

/**
 * The queue dashboard shows the latest completed jobs, so that a newcomer sees the work done;
 * a worker replaces a completed job's items by a summary (completedJobSummary).
 */
export const COMPLETED_JOBS_KEPT = 1_000;

/** Every kind of job is tried until it is applied (the options of each kind, named for it). */
export const TRIED_UNTIL_APPLIED: JobsOptions = {
  attempts: RETRY_FOREVER,
  backoff: { type: "capped-exponential", delay: 500 },
  removeOnComplete: { count: COMPLETED_JOBS_KEPT },
  removeOnFail: false,
};

export const PROFILE_OPERATIONS_JOB_OPTIONS: JobsOptions = TRIED_UNTIL_APPLIED;
export const EVENTS_JOB_OPTIONS: JobsOptions = TRIED_UNTIL_APPLIED;

/**
 * The priority of the jobs `ctl import` queues (docs/bulk.md "Import"). BullMQ takes every job
 * queued without a priority (the gateways', `ctl replay`'s) before any job with one, and jobs of
 * one priority in the order they were queued: a bulk import's backlog never holds another
 * project's live operations behind it, and the import itself is applied in its own order.
 */
export const IMPORT_JOB_PRIORITY = 1;

/** How a producer queues its batch jobs beyond their kind's job options: a priority, or none (live traffic). */
export type BatchJobOptions = Pick<JobsOptions, "priority">;

export function profileOperationsQueue(connection: Redis, prefix: string): Queue<ProfileOperationsJobData> {
  return new Queue(PROFILE_OPERATIONS_QUEUE, {
    connection,
    prefix,
    defaultJobOptions: PROFILE_OPERATIONS_JOB_OPTIONS,
  });
}

export function eventsQueue(connection: Redis, prefix: string): Queue<EventsJobData> {
  return new Queue(EVENTS_QUEUE, { connection, prefix, defaultJobOptions: EVENTS_JOB_OPTIONS });
}

/**
 * The job `write` queues, once it is in Redis and, where its queue's connection was made to wait
 * for replicas (REDIS_REPLICAS_ACK), on that many of them. Every door (the gateway's
 * micro-batchers, the ctl's import and replay) queues through here, so that what it answers for
 * survives a failover. Throws ReplicasBehind when they do not confirm in time.
 */
export async function acknowledgedWrite<T>(queue: Pick<Queue, "opts">, write: Promise<T>): Promise<T> {
  const job = await write;
  await replicasAcknowledged(queue.opts.connection);
  return job;
}

/** One job per gateway micro-batch, in the payload version this release writes, stamped with when it was accepted for the lag metric. */
export function addProfileOperationsBatch(
  queue: Queue<ProfileOperationsJobData>,
  operations: ProfileOperation[],
  options: BatchJobOptions = {},
): Promise<Job<ProfileOperationsJobData>> {
  return acknowledgedWrite(queue, queue.add(PROFILE_OPERATIONS_JOB, profileOperationsJobData(operations), options));
}

export function addEventBatch(
  queue: Queue<EventsJobData>,
  events: TrackedEvent[],
  options: BatchJobOptions = {},
): Promise<Job<EventsJobData>> {
  return acknowledgedWrite(queue, queue.add(EVENTS_JOB, eventsJobData(events), options));
}

/** Backoff for the "capped-exponential" type: doubles from `baseDelay` at each try, up to `maxDelay`. */
export function cappedExponentialBackoff(tries: number, baseDelay = 500, maxDelay = 60_000): number {
  return Math.min(maxDelay, baseDelay * 2 ** Math.min(30, Math.max(0, tries - 1)));
}

/**
 * What a completed batch job keeps: how many items it held and of which projects, never the
 * items (they hold personal data, which an erasure would have to reach there too).
 */
export function completedJobSummary(data: BatchJobData) {
  const items = (batchItems(data) ?? []) as { projectId?: unknown }[];
  return {
    ...withBatchItems(data, []),
    completed: { items: items.length, projects: [...new Set(items.map((item) => item.projectId))] },
  };
}
