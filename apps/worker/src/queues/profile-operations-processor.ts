import { recordDeadLetter } from "@cm/db";
import { operationsOf, type ProfileOperationsJobData } from "@cm/queue";
import type { Processor } from "bullmq";
import type { Logger } from "pino";
import { applyProfileOperations, type ProfileStores } from "@cm/app";
import type { WorkerMetrics } from "../metrics";

export interface ProfileOperationsJobOutcome {
  applied: number;
  poisoned: number;
}

/** Applies a gateway micro-batch; the operations Postgres or our code refuses are dead-lettered. */
export function profileOperationsProcessor(
  stores: ProfileStores,
  logger: Logger,
  metrics: WorkerMetrics,
): Processor<ProfileOperationsJobData, ProfileOperationsJobOutcome> {
  return async (job) => {
    const operations = operationsOf(job.data);
    const endTimer = metrics.profileOperationsBatchSeconds.startTimer();
    const outcome = await applyProfileOperations(stores, operations);
    const seconds = endTimer();
    metrics.profileOperationsApplied.inc(outcome.applied);
    metrics.deadLetters.inc(outcome.poisoned.length);
    if (job.data.acceptedAt !== undefined)
      metrics.profileOperationsLagSeconds.observe((Date.now() - job.data.acceptedAt) / 1000);
    for (const { operation, error } of outcome.poisoned) {
      const message = error instanceof Error ? error.message : String(error);
      await recordDeadLetter(stores.sql, {
        projectId: operation.projectId,
        jobId: job.id ?? null,
        queue: "identify",
        event: operation,
        error,
      });
      logger.error(
        { jobId: job.id, projectId: operation.projectId, error: message },
        "profile operation dead-lettered",
      );
    }
    for (const ignored of outcome.ignoredTopics) {
      logger.warn(
        { projectId: ignored.projectId, topicIds: ignored.topicIds },
        "topic choices for unknown topics ignored",
      );
    }
    logger.debug(
      { jobId: job.id, operations: operations.length, ms: Math.round(seconds * 1000) },
      "profile operations batch applied",
    );
    return { applied: outcome.applied, poisoned: outcome.poisoned.length };
  };
}
