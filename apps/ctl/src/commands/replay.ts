import {
  findDeadLetters,
  removeDeadLetters,
  type DeadLetter,
  type DeadLetterFilter,
  type DeadLetterQueue,
  type Sql,
} from "@cm/db";
import type { ProfileOperation, TrackedEvent } from "@cm/domain";
import {
  addEventsToShards,
  addProfileOperationsToShards,
  everyIntakeQueue,
  findInFailedJobs,
  intakeQueues,
  producerConnection,
  type IntakeQueues,
  type QueuesAt,
  removeFromFailedJobs,
  type BatchJobData,
  type FailedItemPick,
} from "@cm/queue";
import type { Queue } from "bullmq";
import { CliError, integerOption, timeOption } from "../cli-error";

/** Items put back per job: a gateway's micro-batch at most. */
const REPLAY_BATCH = 500;

/** The filters of `ctl replay` and `ctl discard`, as given on the command line. */
export type HeldFilterOptions = {
  project?: string;
  queue?: string;
  from?: string;
  to?: string;
  "error-kind"?: string;
};

/** What a replay or a discard took: operations from dead letters and from failed jobs. */
export interface HeldOutcome {
  deadLetters: number;
  failedJobItems: number;
  /** Dead letters whose text is no operation (what JSON.stringify could not write): left as they are. */
  unreadable: number;
}

export function heldFilter(options: HeldFilterOptions): DeadLetterFilter {
  const filter: DeadLetterFilter = {};
  if (options.project !== undefined) filter.projectId = integerOption(options, "project");
  if (options.queue !== undefined) {
    if (options.queue !== "identify" && options.queue !== "events") {
      throw new CliError("--queue must be identify or events", 2);
    }
    filter.queue = options.queue;
  }
  const from = timeOption(options, "from");
  const to = timeOption(options, "to");
  if (from !== null) filter.from = from;
  if (to !== null) filter.to = to;
  if (options["error-kind"] !== undefined) filter.errorKind = options["error-kind"];
  return filter;
}

/** The failed jobs' items the filter takes: of its project, failed in its time range, for its error kind. */
function pickFailed<Data extends BatchJobData>(filter: DeadLetterFilter): FailedItemPick<Data> {
  return (item, job) => {
    const failedAt = job.finishedOn ?? job.timestamp;
    return (
      (filter.projectId === undefined || item.projectId === filter.projectId) &&
      (filter.from === undefined || failedAt >= filter.from.getTime()) &&
      (filter.to === undefined || failedAt < filter.to.getTime()) &&
      (filter.errorKind === undefined || (job.failedReason ?? "").includes(filter.errorKind))
    );
  };
}

function operationOf(letter: DeadLetter): unknown {
  try {
    const operation = JSON.parse(letter.event) as unknown;
    return typeof operation === "object" && operation !== null && "projectId" in operation ? operation : null;
  } catch {
    return null;
  }
}

async function withQueues<T>(
  { redis, prefix, shards }: QueuesAt,
  act: (queues: IntakeQueues) => Promise<T>,
): Promise<T> {
  const connection = producerConnection(redis);
  const queues = intakeQueues(connection, prefix, shards);
  try {
    return await act(queues);
  } finally {
    await Promise.all(everyIntakeQueue(queues).map((queue) => queue.close()));
    connection.disconnect();
  }
}

/** Every shard of a dead letter's queue. */
const shardsOf = (queues: IntakeQueues, queue: DeadLetterQueue) =>
  (queue === "identify" ? queues.profileOperationsQueues : queues.eventsQueues) as Queue<BatchJobData>[];

/** Puts operations back on their queue, each on its user's shard, in jobs of a micro-batch's size at most. */
async function requeue(queues: IntakeQueues, queue: DeadLetterQueue, items: unknown[]): Promise<void> {
  for (let first = 0; first < items.length; first += REPLAY_BATCH) {
    const batch = items.slice(first, first + REPLAY_BATCH);
    if (queue === "identify")
      await addProfileOperationsToShards(queues.profileOperationsQueues, batch as ProfileOperation[]);
    else await addEventsToShards(queues.eventsQueues, batch as TrackedEvent[]);
  }
}

/** The dead letters the filter takes, a batch at a time, oldest first. */
async function eachDeadLetterBatch(
  sql: Sql,
  filter: DeadLetterFilter,
  act: (letters: DeadLetter[]) => Promise<void>,
): Promise<void> {
  for (let after = 0; ;) {
    const letters = await findDeadLetters(sql, filter, after, REPLAY_BATCH);
    const last = letters[letters.length - 1];
    if (last === undefined) return;
    after = last.id;
    await act(letters);
  }
}

/** The batch queues the filter takes, which hold acknowledged operations. */
const queuesOf = (filter: DeadLetterFilter) =>
  (["identify", "events"] as const).filter((queue) => filter.queue === undefined || filter.queue === queue);

/**
 * The dead letters and failed jobs' operations the filter takes: put back on their queue first
 * when `replay`, then removed. A replayed operation is queued as it was, so that a worker applies
 * it with its own stamps (newer data stays, an erased user stays erased); a replay cut short
 * may queue some twice, which applies them once.
 */
async function takeHeld(sql: Sql, queuesAt: QueuesAt, filter: DeadLetterFilter, replay: boolean): Promise<HeldOutcome> {
  return withQueues(queuesAt, async (queues) => {
    const outcome: HeldOutcome = { deadLetters: 0, failedJobItems: 0, unreadable: 0 };
    await eachDeadLetterBatch(sql, filter, async (letters) => {
      const taken = replay ? letters.filter((letter) => operationOf(letter) !== null) : letters;
      outcome.unreadable += letters.length - taken.length;
      if (replay) {
        for (const queue of queuesOf({})) {
          await requeue(queues, queue, taken.filter((letter) => letter.queue === queue).map(operationOf));
        }
      }
      outcome.deadLetters += await removeDeadLetters(
        sql,
        taken.map((letter) => letter.id),
      );
    });
    for (const queue of queuesOf(filter)) {
      for (const held of shardsOf(queues, queue)) {
        const pick = pickFailed(filter);
        if (replay) await requeue(queues, queue, await findInFailedJobs(held, pick));
        outcome.failedJobItems += await removeFromFailedJobs(held, pick);
      }
    }
    return outcome;
  });
}

/** `ctl replay` (docs/reliability.md): once the cause is fixed, what waits is applied. */
export const replayCommand = (sql: Sql, queuesAt: QueuesAt, filter: DeadLetterFilter) =>
  takeHeld(sql, queuesAt, filter, true);

/** `ctl discard`: what waits is deleted, never applied. */
export const discardCommand = (sql: Sql, queuesAt: QueuesAt, filter: DeadLetterFilter) =>
  takeHeld(sql, queuesAt, filter, false);
