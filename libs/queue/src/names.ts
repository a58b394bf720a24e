export const IDENTIFY_QUEUE = "identify";
export const TOPIC_FANOUT_QUEUE = "topic-fanout";
export const MAINTENANCE_QUEUE = "maintenance";

/** One kind of job per queue: workers do not read the name, the dashboard shows it. */
export const IDENTIFY_JOB = "identify";
export const TOPIC_FANOUT_JOB = "fan-out";
/** Scheduled housekeeping, one job per interval, taken by whichever worker is free. */
export const RETENTION_JOB = "retention";
