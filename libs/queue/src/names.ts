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
