import type { ProfileOperation } from "@cm/domain";
import { Queue, type Job, type JobsOptions } from "bullmq";
import type { Redis } from "ioredis";
import { IDENTIFY_JOB, IDENTIFY_QUEUE } from "./names";
import type { IdentifyJobData } from "./payloads";

/** Retries outlast a Postgres restart; what still fails stays in the failed set, not lost. */
export const IDENTIFY_JOB_OPTIONS: JobsOptions = {
  attempts: 50,
  backoff: { type: "capped-exponential", delay: 500 },
  removeOnComplete: true,
  removeOnFail: false,
};

export function identifyQueue(connection: Redis, prefix: string): Queue<IdentifyJobData> {
  return new Queue<IdentifyJobData>(IDENTIFY_QUEUE, {
    connection,
    prefix,
    defaultJobOptions: IDENTIFY_JOB_OPTIONS,
  });
}

/** One job per gateway micro-batch, stamped with when it was accepted for the lag metric. */
export function addIdentifyBatch(
  queue: Queue<IdentifyJobData>,
  events: ProfileOperation[],
): Promise<Job<IdentifyJobData>> {
  return queue.add(IDENTIFY_JOB, { events, acceptedAt: Date.now() });
}

/** Backoff for the "capped-exponential" type: doubles from the job's delay up to a minute. */
export function cappedExponentialBackoff(attemptsMade: number, baseDelay = 500): number {
  return Math.min(60_000, baseDelay * 2 ** Math.max(0, attemptsMade - 1));
}
