import { logThrottle, type Config } from "@cm/config";
import { cappedExponentialBackoff } from "@cm/queue";
import { Worker, type Processor } from "bullmq";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { pauseWhileRedisIsFull } from "../redis-full-backoff";

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
}

/**
 * Every worker of a process is made here, with the same connection and settings, and with
 * its listeners attached at once: one without an "error" listener has BullMQ print its errors
 * to stderr whole, with the command's arguments. Failures are logged throttled, by job id and
 * message only (job data holds personal data); an error saying Redis is full pauses them all.
 */
export function queueWorkers(connection: Redis, config: Config, logger: Logger): QueueWorkers {
  const workers: Worker[] = [];
  const onRedisFull = pauseWhileRedisIsFull(workers, connection, logger);
  const createQueueWorker: CreateQueueWorker = (queueName, processor, { concurrency, heldUnderWorkerLock }) => {
    const worker = new Worker(queueName, processor, {
      connection,
      prefix: config.queuePrefix,
      concurrency,
      ...(heldUnderWorkerLock && {
        lockDuration: config.workerLockMs,
        stalledInterval: config.workerLockMs,
        maxStalledCount: 5,
      }),
      settings: { backoffStrategy: (attemptsMade: number) => cappedExponentialBackoff(attemptsMade) },
    });
    const logFailed = logThrottle(10);
    const logError = logThrottle(10);
    worker.on("failed", (job, error) =>
      logFailed((suppressed) =>
        logger.warn(
          { jobId: job?.id, attempts: job?.attemptsMade, err: error.message, suppressed },
          `${queueName} job failed`,
        ),
      ),
    );
    worker.on("error", (error) => {
      onRedisFull(error);
      logError((suppressed) => logger.warn({ err: error.message, suppressed }, `${queueName} worker error`));
    });
    workers.push(worker);
    return worker;
  };
  return { createQueueWorker, workers };
}
