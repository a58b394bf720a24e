import { isUnavailable } from "@cm/db";
import { cappedExponentialBackoff } from "@cm/queue";
import { DelayedError, RateLimitError, WaitingChildrenError, WaitingError, type Processor } from "bullmq";

/** What a processor throws to tell BullMQ where the job goes next (back to wait, delayed): no failure. */
const isMove = (error: unknown) =>
  error instanceof DelayedError ||
  error instanceof WaitingError ||
  error instanceof WaitingChildrenError ||
  error instanceof RateLimitError;

/** Why a try failed, for metrics and logs: Postgres out of reach, or anything else (a bug, a timeout, Redis). */
export type RetryCause = "outage" | "error";

export interface RetryPolicy {
  baseDelayMs: number;
  maxDelayMs: number;
  onRetry(cause: RetryCause, error: unknown, jobId: string | undefined, tries: number): void;
}

/**
 * A job whose processor throws is tried again after a capped backoff (BullMQ's retry, with the
 * workers' backoffStrategy), for as long as it takes: jobs are queued with attempts that never
 * run out (RETRY_FOREVER), and a job queued before with a count (50) is put back by hand when its
 * last try fails, so no attempt count turns an outage or a bug into a lost job
 * (docs/reliability.md). Processors dead-letter the items whose input is at fault themselves
 * (isolate-refused.ts): every error that reaches here says nothing against the job.
 */
export function retryUntilApplied<Data, Result>(
  processor: Processor<Data, Result>,
  policy: RetryPolicy,
): Processor<Data, Result> {
  return async (job, token) => {
    try {
      return await processor(job, token);
    } catch (error) {
      if (isMove(error)) throw error;
      const tries = job.attemptsMade + 1;
      policy.onRetry(isUnavailable(error) ? "outage" : "error", error, job.id, tries);
      const attempts = job.opts.attempts ?? 1;
      if (tries < attempts || token === undefined) throw error;
      // BullMQ would fail it for good: put it back as its own retry would.
      await job.moveToDelayed(
        Date.now() + cappedExponentialBackoff(tries, policy.baseDelayMs, policy.maxDelayMs),
        token,
      );
      throw new DelayedError();
    }
  };
}
