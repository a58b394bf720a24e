import { applyProfileWrites, type ProfileWrite, type Sql } from "@cm/db";
import {
  erasureState,
  mergeStates,
  profileIdOf,
  profileKeyForId,
  stateFromOperation,
  type ProfileOperation,
  type ProfileState,
  type StateOperation,
} from "@cm/domain";
import type { Erasure } from "./erase-profiles";
import { applyIsolatingRefused } from "./isolate-refused";

/**
 * One write per profile row: the operations on it and the erasures of it are merged first
 * (merging is order-free), so that a job's erasures cost no statement of their own.
 */
export function profileWrites(
  operations: readonly StateOperation[],
  erasures: readonly Erasure[] = [],
): ProfileWrite[] {
  const byProfile = new Map<string, ProfileWrite>();
  const write = (projectId: number, key: string, state: ProfileState) => {
    const id = `${projectId}\u0000${key}`;
    const existing = byProfile.get(id);
    if (existing === undefined) byProfile.set(id, { projectId, key, externalId: profileIdOf({ key }), state });
    else existing.state = mergeStates(existing.state, state);
  };
  for (const operation of operations) {
    write(operation.projectId, profileKeyForId(profileIdOf(operation)), stateFromOperation(operation));
  }
  for (const { projectId, keys, t } of erasures) for (const key of keys) write(projectId, key, erasureState(t));
  return [...byProfile.values()];
}

export interface ApplyOutcome {
  applied: number;
  poisoned: { operation: ProfileOperation; error: unknown }[];
  ignoredTopics: { projectId: number; key: string; topicIds: string[] }[];
}

/**
 * Applies identifies, edits, tags and subscriptions, and the erasures of the job's deletes, in
 * one statement; operations refused as input are reported as poisoned and every other one is
 * applied (applyIsolatingRefused).
 */
export async function applyStateOperations(
  sql: Sql,
  operations: readonly StateOperation[],
  erasures: readonly Erasure[] = [],
): Promise<ApplyOutcome> {
  const outcome: ApplyOutcome = { applied: 0, poisoned: [], ignoredTopics: [] };
  if (operations.length === 0 && erasures.length > 0) await applyProfileWrites(sql, profileWrites([], erasures));
  await applyIsolatingRefused(
    operations,
    async (part) => {
      const result = await applyProfileWrites(sql, profileWrites(part, erasures));
      outcome.applied += part.length;
      outcome.ignoredTopics.push(...result.ignoredTopics);
    },
    (operation, error) => outcome.poisoned.push({ operation, error }),
  );
  return outcome;
}
