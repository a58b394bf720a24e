import type { Sql } from "@cm/db";
import type { TopicFanoutJobData } from "@cm/queue";
import { WaitingError, type Processor } from "bullmq";
import type { Logger } from "pino";
import { FANOUT_CHUNK_PROFILES, fanOutTopicDefault, type FanoutOutcome } from "@cm/app";
import type { WorkerMetrics } from "../metrics";

/** `stopping`: whether the worker running the job is closing, asked between chunks. */
export function topicFanoutProcessor(
  sql: Sql,
  logger: Logger,
  metrics: WorkerMetrics,
  stopping: () => boolean,
): Processor<TopicFanoutJobData, FanoutOutcome> {
  return async (job, token) => {
    const started = performance.now();
    const progress = metrics.fanoutProfiles.labels({ topic: String(job.data.topicId) });
    const outcome = await fanOutTopicDefault(sql, job.data, stopping, FANOUT_CHUNK_PROFILES, (updated) =>
      progress.inc(updated),
    );
    if (outcome.state === "paused") {
      // Stopping: the job goes back to the queue at once, and whoever takes it resumes from
      // the progress saved with the last chunk, instead of this process finishing it first.
      await job.moveToWait(token);
      throw new WaitingError();
    }
    logger.info(
      { jobId: job.id, ...job.data, ...outcome, ms: Math.round(performance.now() - started) },
      outcome.state === "stale" ? "topic fan-out superseded" : "topic fan-out finished",
    );
    return outcome;
  };
}
