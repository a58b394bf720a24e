import { Queue } from "bullmq";
import { MAINTENANCE_QUEUE, RETENTION_JOB, queueName } from "./names";
import { isCluster, type RedisConnection } from "./redis-nodes";

export function maintenanceQueue(connection: RedisConnection, prefix: string): Queue {
  return new Queue(queueName(MAINTENANCE_QUEUE, isCluster(connection)), {
    connection,
    prefix,
    defaultJobOptions: { removeOnComplete: true, removeOnFail: { count: 100 } },
  });
}

/** Retention jobs name their kind and version too (payloads.ts); those of older schedules, none, read as this. */
export const RETENTION_KIND = { kind: "retention", v: 1 } as const;

/** Declares the retention schedule; every worker does at start, and upserting it is idempotent. */
export async function scheduleRetention(queue: Queue, everyMs: number): Promise<void> {
  await queue.upsertJobScheduler(
    RETENTION_JOB,
    { every: everyMs },
    { name: RETENTION_JOB, data: { ...RETENTION_KIND } },
  );
}
