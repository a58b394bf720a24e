import type { ProfileOperation, TrackedEvent } from "@cm/domain";
import { Queue, type Job, type JobsOptions } from "bullmq";
import { replicasAcknowledged } from "./replica-acknowledgement";
import { EVENTS_JOB, EVENTS_QUEUE, PROFILE_OPERATIONS_JOB, PROFILE_OPERATIONS_QUEUE, queueName } from "./names";
import { isCluster, type RedisConnection } from "./redis-nodes";
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

/**
 * How a producer queues its batch jobs beyond their kind's job options: a priority, or none (live
 * traffic); an id, the same for each try of one batch, so that a try that landed is not queued twice.
 */
export type BatchJobOptions = Pick<JobsOptions, "priority" | "jobId">;

/** Shard `shard` of the profile operations queue (the queue itself, with one shard). */
export function profileOperationsQueue(
  connection: RedisConnection,
  prefix: string,
  shard = 0,
): Queue<ProfileOperationsJobData> {
  return new Queue(queueName(PROFILE_OPERATIONS_QUEUE, isCluster(connection), shard), {
    connection,
    prefix,
    defaultJobOptions: PROFILE_OPERATIONS_JOB_OPTIONS,
  });
}

export function eventsQueue(connection: RedisConnection, prefix: string, shard = 0): Queue<EventsJobData> {
  return new Queue(queueName(EVENTS_QUEUE, isCluster(connection), shard), {
    connection,
    prefix,
    defaultJobOptions: EVENTS_JOB_OPTIONS,
  });
}

/** The numbers of the intake's shards (INTAKE_QUEUE_SHARDS): 0 to `shards` - 1. */
export const shardNumbers = (shards: number): number[] => Array.from({ length: shards }, (_, shard) => shard);

/** Every shard of the profile operations queue, by number. */
export const profileOperationsQueues = (connection: RedisConnection, prefix: string, shards: number) =>
  shardNumbers(shards).map((shard) => profileOperationsQueue(connection, prefix, shard));

/** Every shard of the events queue, by number. */
export const eventsQueues = (connection: RedisConnection, prefix: string, shards: number) =>
  shardNumbers(shards).map((shard) => eventsQueue(connection, prefix, shard));

/** Every shard of both intake queues: where the gateway and the ctl queue, and what the workers take. */
export interface IntakeQueues {
  profileOperationsQueues: Queue<ProfileOperationsJobData>[];
  eventsQueues: Queue<EventsJobData>[];
}

export const intakeQueues = (connection: RedisConnection, prefix: string, shards: number): IntakeQueues => ({
  profileOperationsQueues: profileOperationsQueues(connection, prefix, shards),
  eventsQueues: eventsQueues(connection, prefix, shards),
});

/** Each queue of `intake`, every shard of both apart. */
export const everyIntakeQueue = (intake: IntakeQueues): Queue[] => [
  ...intake.profileOperationsQueues,
  ...intake.eventsQueues,
];

/**
 * The shard of the intake queues that a user's profile operations and tracked events go to, of
 * `shards`: the same for both, on every gateway and ctl, so that a user's are queued (and taken)
 * in one queue in the order they were accepted. A hash of the project and the user's id, the id
 * the profile key `i:<id>` is made of (FNV-1a over its UTF-16 code units): it must never change, or a user's operations
 * queued before and after the change would be in two queues.
 */
export function intakeShard(projectId: number, userId: string, shards: number): number {
  if (shards === 1) return 0;
  const text = `${projectId}:${userId}`;
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return (hash >>> 0) % shards;
}

/** A user's shard of the intake queues for a profile operation (its user's id) and for a tracked event (its user's). */
export const operationShard = (operation: { projectId: number; id: string }, shards: number) =>
  intakeShard(operation.projectId, operation.id, shards);
export const eventShard = (event: { projectId: number; userId: string }, shards: number) =>
  intakeShard(event.projectId, event.userId, shards);

/**
 * The job `write` queues, once it is in Redis and, where its queue's connection was made to wait
 * for replicas (REDIS_REPLICAS_ACK), on that many of them. Every door (the gateway's
 * micro-batchers, the ctl's import and replay) queues through here, so that what it answers for
 * survives a failover. Throws ReplicasBehind when they do not confirm in time.
 */
export async function acknowledgedWrite<T>(
  queue: Pick<Queue, "opts" | "qualifiedName">,
  write: Promise<T>,
): Promise<T> {
  const job = await write;
  await replicasAcknowledged(queue.opts.connection, queue.qualifiedName);
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

/**
 * Items of many users, each queued on its user's shard of `queues`: one job a shard that has
 * any, the shards written at once. The ctl's doors (import, replay) queue through here; the
 * gateway has a micro-batcher a shard.
 */
async function addToShards<Item, Data>(
  queues: Queue<Data>[],
  items: Item[],
  shardOf: (item: Item, shards: number) => number,
  add: (queue: Queue<Data>, items: Item[]) => Promise<Job<Data>>,
): Promise<void> {
  const byShard = new Map<number, Item[]>();
  for (const item of items) {
    const shard = shardOf(item, queues.length);
    const held = byShard.get(shard);
    if (held === undefined) byShard.set(shard, [item]);
    else held.push(item);
  }
  await Promise.all([...byShard].map(([shard, held]) => add(queues[shard]!, held)));
}

export const addProfileOperationsToShards = (
  queues: Queue<ProfileOperationsJobData>[],
  operations: ProfileOperation[],
  options: BatchJobOptions = {},
) => addToShards(queues, operations, operationShard, (queue, held) => addProfileOperationsBatch(queue, held, options));

export const addEventsToShards = (
  queues: Queue<EventsJobData>[],
  events: TrackedEvent[],
  options: BatchJobOptions = {},
) => addToShards(queues, events, eventShard, (queue, held) => addEventBatch(queue, held, options));

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
