import { applyProfileWrites, isRefusedInput, type ProfileWrite, type Sql } from "@cm/db";
import {
  mergeStates,
  profileIdOf,
  profileKeyForId,
  stateFromOperation,
  type ProfileOperation,
  type StateOperation,
} from "@cm/domain";

/** One write per profile: operations on the same profile are merged first (merging is order-free). */
export function profileWrites(operations: readonly StateOperation[]): ProfileWrite[] {
  const byProfile = new Map<string, ProfileWrite>();
  for (const operation of operations) {
    const externalId = profileIdOf(operation);
    const key = profileKeyForId(externalId);
    const id = `${operation.projectId}\u0000${key}`;
    const state = stateFromOperation(operation);
    const existing = byProfile.get(id);
    if (existing === undefined) {
      byProfile.set(id, { projectId: operation.projectId, key, externalId, state });
    } else {
      existing.state = mergeStates(existing.state, state);
    }
  }
  return [...byProfile.values()];
}

export interface ApplyOutcome {
  applied: number;
  poisoned: { operation: ProfileOperation; error: unknown }[];
  ignoredTopics: { projectId: number; key: string; topicIds: string[] }[];
}

/**
 * Applies identifies, edits, tags and subscriptions in one statement. When the input is refused
 * (by Postgres, or by our own code before it: not an outage), the batch is split in halves until
 * the operations refused stand alone; those are reported as poisoned and every other one is
 * applied. Other errors are thrown, for the queue to retry the whole job.
 */
export async function applyStateOperations(sql: Sql, operations: readonly StateOperation[]): Promise<ApplyOutcome> {
  const outcome: ApplyOutcome = { applied: 0, poisoned: [], ignoredTopics: [] };
  const apply = async (part: readonly StateOperation[]): Promise<void> => {
    if (part.length === 0) return;
    try {
      const result = await applyProfileWrites(sql, profileWrites(part));
      outcome.applied += part.length;
      outcome.ignoredTopics.push(...result.ignoredTopics);
    } catch (error) {
      if (!isRefusedInput(error)) throw error;
      if (part.length === 1) {
        outcome.poisoned.push({ operation: part[0] as StateOperation, error });
        return;
      }
      const middle = Math.ceil(part.length / 2);
      await apply(part.slice(0, middle));
      await apply(part.slice(middle));
    }
  };
  await apply(operations);
  return outcome;
}
