import { storeTrackedEvents, type ProfileStores } from "@cm/app";
import { recordDeadLetter } from "@cm/db";
import type { EventsJobData } from "@cm/queue";
import type { Processor } from "bullmq";
import type { Logger } from "pino";
import type { WorkerMetrics } from "../metrics";

export interface EventsJobOutcome {
  stored: number;
  skipped: number;
  poisoned: number;
}

/** Stores a gateway micro-batch of tracked events; what Postgres or our code refuses is dead-lettered. */
export function eventsProcessor(
  stores: ProfileStores,
  logger: Logger,
  metrics: WorkerMetrics,
): Processor<EventsJobData, EventsJobOutcome> {
  return async (job) => {
    const endTimer = metrics.eventsBatchSeconds.startTimer();
    const outcome = await storeTrackedEvents(stores, job.data.events);
    endTimer();
    metrics.eventsStored.inc(outcome.stored);
    metrics.eventsSkipped.inc(outcome.skipped);
    metrics.deadLetters.inc(outcome.poisoned.length);
    if (job.data.acceptedAt !== undefined) metrics.eventsLagSeconds.observe((Date.now() - job.data.acceptedAt) / 1000);
    for (const { item, error } of outcome.poisoned) {
      const message = error instanceof Error ? error.message : String(error);
      const projectId = (item as { projectId?: number }).projectId ?? null;
      await recordDeadLetter(stores.sql, { projectId, jobId: job.id ?? null, queue: "events", event: item, error });
      logger.error({ jobId: job.id, projectId, error: message }, "event dead-lettered");
    }
    return { stored: outcome.stored, skipped: outcome.skipped, poisoned: outcome.poisoned.length };
  };
}
