import { recordDeadLetter, type Sql } from "@cm/db";
import type { IdentifyJobData } from "@cm/queue";
import type { Processor } from "bullmq";
import type { Logger } from "pino";
import { applyIdentifyEvents } from "../features/apply-identify";
import type { WorkerMetrics } from "../metrics";

export interface IdentifyJobOutcome {
  applied: number;
  poisoned: number;
}

/** Applies a gateway micro-batch; the events Postgres or our code refuses are dead-lettered. */
export function identifyProcessor(
  sql: Sql,
  logger: Logger,
  metrics: WorkerMetrics,
): Processor<IdentifyJobData, IdentifyJobOutcome> {
  return async (job) => {
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
}
