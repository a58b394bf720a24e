/** Profile operations keep the queue and job names of the identifies they began as: names on the wire. */
export const PROFILE_OPERATIONS_QUEUE = "identify";
export const EVENTS_QUEUE = "events";
export const TOPIC_FANOUT_QUEUE = "topic-fanout";
export const MAINTENANCE_QUEUE = "maintenance";

/** One kind of job per queue: workers read the kind in the job's data, the dashboard shows the name. */
export const PROFILE_OPERATIONS_JOB = "identify";
export const EVENTS_JOB = "track";
export const TOPIC_FANOUT_JOB = "fan-out";
/** Scheduled housekeeping, one job per interval, taken by whichever worker is free. */
export const RETENTION_JOB = "retention";
/** Deliveries to webhook endpoints, one job per endpoint at a time, and the poll that queues them. */
export const WEBHOOKS_QUEUE = "webhooks";
export const WEBHOOK_DELIVERY_JOB = "deliver";
export const WEBHOOK_POLL_JOB = "poll";

/**
 * The BullMQ name of the queue `base` (of shard `shard` of an intake queue). BullMQ's scripts use
 * several keys of a queue at once, which a Redis Cluster allows only within one slot: on a
 * cluster the name is a hash tag (`{identify}`), so that every key of the queue
 * (`<prefix>:{identify}:wait`, …) is in the slot of its name. Each shard past the first has a
 * tag of its own (`{identify-1}`), so that the shards are in different slots, on the nodes that
 * serve them. Off a cluster the first shard keeps the name the previous release gives the queue.
 */
export function queueName(base: string, onCluster: boolean, shard = 0): string {
  if (shard > 0) return `{${base}-${shard}}`;
  return onCluster ? `{${base}}` : base;
}
