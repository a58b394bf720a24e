import type { KindVersion } from "@cm/queue";
import { DelayedError, type Processor } from "bullmq";

/** How long a job of a kind or version this worker does not know waits before a worker looks again. */
export const LEAVE_ALONE_MS = 60_000;

/**
 * Runs `processor` only for jobs of a kind and payload version it reads, one of `known` (and for
 * unmarked jobs, queued before kinds existed, when `readsUnmarked`) holding no item it does not know
 * (`unknownItem` names the first: a newer release may add a type of item, such as a profile
 * operation, within a version). Any other job was queued by a newer gateway during a rolling update: it is left
 * alone, put back with a delay for a worker that knows it, neither failed nor dead-lettered, its
 * attempts untouched.
 */
export function forKnownKind<Data extends { kind?: unknown; v?: unknown }, Result>(
  known: readonly KindVersion[],
  readsUnmarked: boolean,
  processor: Processor<Data, Result>,
  onLeftAlone: (kind: unknown, v: unknown, unknownItem?: string) => void,
  unknownItem: (data: Data) => string | undefined = () => undefined,
): Processor<Data, Result> {
  return async (job, token) => {
    const { kind, v } = job.data;
    const unmarked = kind === undefined && v === undefined;
    const knownKind = (unmarked && readsUnmarked) || known.some((read) => kind === read.kind && v === read.v);
    const unknown = knownKind ? unknownItem(job.data) : undefined;
    if (knownKind && unknown === undefined) return processor(job, token);
    onLeftAlone(kind, v, unknown);
    await job.moveToDelayed(Date.now() + LEAVE_ALONE_MS, token);
    throw new DelayedError();
  };
}
