import type { Config } from "@cm/config";
import type { Sql } from "@cm/db";
import { cappedExponentialBackoff, TOPIC_FANOUT_QUEUE, type TopicFanoutJobData } from "@cm/queue";
import { WaitingError, Worker, type Job } from "bullmq";
import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { FANOUT_CHUNK_PROFILES, fanOutTopicDefault, type FanoutOutcome } from "../features/fan-out-topic-default";
import type { WorkerMetrics } from "../metrics";

/** Fan-outs are Postgres-bound; two at once keep one long fan-out from holding up every other topic. */
export const FANOUT_CONCURRENCY = 2;

export function topicFanoutWorker(
  config: Config,
  connection: Redis,
  sql: Sql,
  logger: Logger,
  metrics: WorkerMetrics,
): Worker<TopicFanoutJobData> {
  const fanOut = async (job: Job<TopicFanoutJobData>, token?: string): Promise<FanoutOutcome> => {
    const started = performance.now();
    const progress = metrics.fanoutProfiles.labels({ topic: String(job.data.topicId) });
    const outcome = await fanOutTopicDefault(
      sql,
      job.data,
      () => worker.closing !== undefined,
      FANOUT_CHUNK_PROFILES,
      (updated) => progress.inc(updated),
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

  const worker: Worker<TopicFanoutJobData> = new Worker<TopicFanoutJobData>(TOPIC_FANOUT_QUEUE, fanOut, {
    connection,
    prefix: config.queuePrefix,
    concurrency: FANOUT_CONCURRENCY,
    lockDuration: config.workerLockMs,
    stalledInterval: config.workerLockMs,
    maxStalledCount: 5,
    settings: { backoffStrategy: (attemptsMade: number) => cappedExponentialBackoff(attemptsMade) },
  });
  return worker;
}
