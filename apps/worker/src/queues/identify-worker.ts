import type { Config } from "@cm/config";
import { recordDeadLetter, type Sql } from "@cm/db";
import { cappedExponentialBackoff, IDENTIFY_QUEUE, type IdentifyJobData } from "@cm/queue";
import { Worker, type Job } from "bullmq";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { applyIdentifyEvents } from "../features/apply-identify";
import type { WorkerMetrics } from "../metrics";

export function identifyWorker(
  config: Config,
  connection: Redis,
  sql: Sql,
  logger: Logger,
  metrics: WorkerMetrics,
): Worker<IdentifyJobData> {
  const applyJob = async (job: Job<IdentifyJobData>): Promise<{ applied: number; poisoned: number }> => {
    const endTimer = metrics.identifyBatchSeconds.startTimer();
    const outcome = await applyIdentifyEvents(sql, job.data.events);
    const seconds = endTimer();
    metrics.identifyEventsApplied.inc(outcome.applied);
    metrics.identifyDeadLetters.inc(outcome.poisoned.length);
    if (job.data.acceptedAt !== undefined)
      metrics.identifyLagSeconds.observe((Date.now() - job.data.acceptedAt) / 1000);
    for (const { event, error } of outcome.poisoned) {
      const message = error instanceof Error ? error.message : String(error);
      await recordDeadLetter(sql, { projectId: event.projectId, jobId: job.id ?? null, event, error: message });
      logger.error({ jobId: job.id, projectId: event.projectId, error: message }, "identify event dead-lettered");
    }
    for (const ignored of outcome.ignoredTopics) {
      logger.warn(
        { projectId: ignored.projectId, topicIds: ignored.topicIds },
        "topic choices for unknown topics ignored",
      );
    }
    logger.debug(
      { jobId: job.id, events: job.data.events.length, ms: Math.round(seconds * 1000) },
      "identify batch applied",
    );
    return { applied: outcome.applied, poisoned: outcome.poisoned.length };
  };

  return new Worker<IdentifyJobData>(IDENTIFY_QUEUE, applyJob, {
    connection,
    prefix: config.queuePrefix,
    concurrency: config.workerConcurrency,
    lockDuration: config.workerLockMs,
    stalledInterval: config.workerLockMs,
    maxStalledCount: 5,
    settings: { backoffStrategy: (attemptsMade: number) => cappedExponentialBackoff(attemptsMade) },
  });
}
