import { fanOutChunk, type Sql } from "@cm/db";
import type { TopicFanoutJobData } from "@cm/queue";

/** Profiles per chunk: each chunk is one short transaction, a few tens of milliseconds. */
export const FANOUT_CHUNK_PROFILES = 5_000;

export interface FanoutOutcome {
  /** `stale`: a newer default change took over; `paused`: asked to stop between chunks. */
  state: "finished" | "stale" | "paused";
  chunks: number;
  updated: number;
}

/**
 * Gives every profile of the topic's project without an explicit choice the topic's new
 * default, chunk by chunk from where the fan-out stopped last (its progress is in Postgres).
 * `shouldPause` is asked between chunks; `onChunk` hears how many profiles each chunk updated.
 */
export async function fanOutTopicDefault(
  sql: Sql,
  job: TopicFanoutJobData,
  shouldPause: () => boolean,
  chunkSize = FANOUT_CHUNK_PROFILES,
  onChunk: (updated: number) => void = () => {},
): Promise<FanoutOutcome> {
  const outcome: FanoutOutcome = { state: "paused", chunks: 0, updated: 0 };
  while (!shouldPause()) {
    const step = await fanOutChunk(sql, job.topicId, job.generation, chunkSize);
    if (step.state === "stale") return { ...outcome, state: "stale" };
    outcome.chunks += 1;
    outcome.updated += step.updated;
    onChunk(step.updated);
    if (step.state === "finished") return { ...outcome, state: "finished" };
  }
  return outcome;
}
