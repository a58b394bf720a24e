import { logThrottle, type Config } from "@cm/config";
import type { Sql } from "@cm/db";
import {
  everyIntakeQueue,
  maintenanceQueue,
  intakeQueues,
  RETENTION_KIND,
  scheduleRetention,
  topicFanoutQueue,
  type RedisConnection,
} from "@cm/queue";
import type { Queue } from "bullmq";
import type { Logger } from "pino";
import { applyRetention, type RetentionOutcome } from "@cm/app";
import type { CreateQueueWorker } from "./create-queue-worker";
import { forKnownKind } from "./known-kind";

export interface MaintenanceWorker {
  close(): Promise<void>;
}

/** A worker that could not declare the schedule at start (Redis full, say) tries again this often. */
const DECLARE_RETRY_MS = 60_000;

/**
 * Runs the retention job on its schedule, which every worker declares (idempotently). A worker
 * starts even when Redis refuses the declaration, and keeps trying.
 */
export async function maintenanceWorker(
  createQueueWorker: CreateQueueWorker,
  config: Config,
  connection: RedisConnection,
  sql: Sql,
  logger: Logger,
  onLeftAlone: (kind: unknown, v: unknown) => void,
): Promise<MaintenanceWorker> {
  const schedule = maintenanceQueue(connection, config.queuePrefix);
  const cleaned: Queue[] = [
    ...everyIntakeQueue(intakeQueues(connection, config.queuePrefix, config.intakeQueueShards)),
    topicFanoutQueue(connection, config.queuePrefix),
  ];
  // Without a listener BullMQ prints a queue's errors to stderr whole, with the command's arguments.
  const logError = logThrottle(10);
  for (const queue of [schedule, ...cleaned]) {
    queue.on("error", (error) =>
      logError((suppressed) => logger.warn({ err: error.message, suppressed }, "maintenance queue error")),
    );
  }
  const declare = () =>
    scheduleRetention(schedule, config.maintenanceEveryMs).then(
      () => true,
      (error: unknown) => {
        logger.warn(
          { err: error instanceof Error ? error.message : String(error) },
          "retention schedule not declared; trying again later",
        );
        return false;
      },
    );
  const retry = (await declare())
    ? null
    : setInterval(() => void declare().then((done) => done && retry && clearInterval(retry)), DECLARE_RETRY_MS);
  retry?.unref();
  const applyRetentionJob = async (): Promise<RetentionOutcome> => {
    const outcome = await applyRetention(sql, cleaned, config);
    logger.info(outcome, "retention applied");
    if (outcome.agedFailedJobs + outcome.agedDeadLetters > 0) {
      logger.warn(
        { failedJobs: outcome.agedFailedJobs, deadLetters: outcome.agedDeadLetters },
        "failed jobs or dead letters have waited past FAILED_JOB_WARN_DAYS / DEAD_LETTER_WARN_DAYS: replay or discard them (ctl replay, ctl discard)",
      );
    }
    return outcome;
  };
  const worker = createQueueWorker(
    schedule.name,
    forKnownKind([RETENTION_KIND], true, applyRetentionJob, onLeftAlone),
    {
      concurrency: 1,
      heldUnderWorkerLock: false,
    },
  );
  return {
    async close() {
      if (retry) clearInterval(retry);
      await worker.close();
      await Promise.all([schedule.close(), ...cleaned.map((queue) => queue.close())]);
    },
  };
}
