import { logThrottle, type Config } from "@cm/config";
import {
  batchItems,
  cappedExponentialBackoff,
  completedJobSummary,
  type BatchJobData,
  type RedisConnection,
} from "@cm/queue";
import { Worker, type Processor } from "bullmq";
import type { Logger } from "pino";
import type { WorkerMetrics } from "../metrics";
import { pauseWhileRedisIsFull } from "../redis-full-backoff";
import { retryUntilApplied, type RetryCause } from "./retry-until-applied";

/**
 * A batch job applied keeps a summary instead of its items (completedJobSummary): the queue
 * dashboard shows the latest completed jobs without holding anyone's data.
 */
function summarisedWhenDone<Data, Result>(processor: Processor<Data, Result>): Processor<Data, Result> {
  return async (job, token) => {
    const result = await processor(job, token);
    const data = job.data as BatchJobData;
    if ((batchItems(data)?.length ?? 0) > 0) await job.updateData(completedJobSummary(data) as Data);
    return result;
  };
}

/** What differs between the queues' workers. */
export interface QueueWorkerOptions {
  concurrency: number;
  /**
   * Jobs are locked for WORKER_LOCK_MS (a crashed worker's jobs return after it) and handed on
   * up to five times when the worker holding one dies; false keeps BullMQ's defaults (30 s, once).
   */
  heldUnderWorkerLock: boolean;
}

export type CreateQueueWorker = <Data, Result>(
  queueName: string,
  processor: Processor<Data, Result>,
  options: QueueWorkerOptions,
) => Worker<Data, Result>;

export interface QueueWorkers {
  createQueueWorker: CreateQueueWorker;
  /** Every worker created so far, in order. */
  workers: Worker[];
  /** How many jobs this worker put back after a failed try and has not seen applied since, by cause. */
  waitingOnRetry(): Record<RetryCause, number>;
}

/**
 * Every worker of a process is made here, with the same connection and settings, and with
 * its listeners attached at once: one without an "error" listener has BullMQ print its errors
 * to stderr whole, with the command's arguments. Failures are logged throttled, by job id and
 * message only (job data holds personal data); an error saying Redis is full pauses them all.
 * A job whose try fails is tried again until it is applied (retryUntilApplied).
 */
export function queueWorkers(
  connection: RedisConnection,
  config: Config,
  logger: Logger,
  metrics: Pick<WorkerMetrics, "jobRetries" | "jobsWaitingOnRetry">,
): QueueWorkers {
  const workers: Worker[] = [];
  const onRedisFull = pauseWhileRedisIsFull(workers, connection, logger);
  // Jobs another worker applied after this one put them back stay here until they are this old.
  const forgetAfterMs = 2 * config.jobRetryMaxDelayMs + 60_000;
  const retrying = new Map<string, { cause: RetryCause; at: number }>();
  const waitingOnRetry = () => {
    const counts: Record<RetryCause, number> = { outage: 0, error: 0 };
    for (const [job, { cause, at }] of retrying) {
      if (Date.now() - at > forgetAfterMs) retrying.delete(job);
      else counts[cause] += 1;
    }
    for (const cause of ["outage", "error"] as const) metrics.jobsWaitingOnRetry.set({ cause }, counts[cause]);
    return counts;
  };
  const createQueueWorker: CreateQueueWorker = (queueName, processor, { concurrency, heldUnderWorkerLock }) => {
    const logRetry = logThrottle(10);
    const retried = retryUntilApplied(processor, {
      baseDelayMs: config.jobRetryBaseDelayMs,
      maxDelayMs: config.jobRetryMaxDelayMs,
      onRetry(cause, error, jobId, tries) {
        metrics.jobRetries.inc({ queue: queueName, cause });
        retrying.set(`${queueName}:${jobId}`, { cause, at: Date.now() });
        waitingOnRetry();
        logRetry((suppressed) =>
          logger.warn(
            { jobId, tries, cause, err: error instanceof Error ? error.message : String(error), suppressed },
            `${queueName} job failed, to be tried again`,
          ),
        );
      },
    });
    const worker = new Worker(queueName, summarisedWhenDone(retried), {
      connection,
      prefix: config.queuePrefix,
      concurrency,
      ...(heldUnderWorkerLock && {
        lockDuration: config.workerLockMs,
        stalledInterval: config.workerLockMs,
        maxStalledCount: 5,
      }),
      settings: {
        backoffStrategy: (attemptsMade: number) =>
          cappedExponentialBackoff(attemptsMade, config.jobRetryBaseDelayMs, config.jobRetryMaxDelayMs),
      },
    });
    worker.on("completed", (job) => {
      if (retrying.delete(`${queueName}:${job.id}`)) waitingOnRetry();
    });
    const logFailed = logThrottle(10);
    const logError = logThrottle(10);
    // A try that will be tried again is logged by onRetry; this is a job left in the failed set
    // (one that stalled past maxStalledCount: its worker died with it five times).
    worker.on("failed", (job, error) => {
      if (job !== undefined && job.attemptsMade < (job.opts.attempts ?? 1)) return;
      logFailed((suppressed) =>
        logger.warn(
          { jobId: job?.id, attempts: job?.attemptsMade, err: error.message, suppressed },
          `${queueName} job failed`,
        ),
      );
    });
    worker.on("error", (error) => {
      onRedisFull(error);
      logError((suppressed) => logger.warn({ err: error.message, suppressed }, `${queueName} worker error`));
    });
    workers.push(worker);
    return worker;
  };
  return { createQueueWorker, workers, waitingOnRetry };
}
