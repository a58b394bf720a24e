import { applyProfileWrites, type ProfileWrite, type Sql } from "@cm/db";
import {
  emptyState,
  erasureState,
  mergeStates,
  stateFromOperation,
  unstorableText,
  type ProfileState,
  type ReidentifyOperation,
  type StateOperation,
  type UnkeyedProfileOperation,
} from "@cm/domain";
import type { Erasure } from "./erase-profiles";
import { applyIsolatingRefused } from "../isolate-refused";

/**
 * One write per profile row: the operations on it and the erasures of it are merged first
 * (merging is order-free), so that a job's erasures cost no statement of their own. Operations
 * are keyed as stored (withStoredKeys). A reidentify's new id gets a row holding its id, which
 * the read of the profile shows (an erasure holds none, libs/db applyProfileWrites).
 */
export function profileWrites(
  operations: readonly StateOperation[],
  erasures: readonly Erasure[] = [],
  reidentifies: readonly ReidentifyOperation[] = [],
): ProfileWrite[] {
  const byProfile = new Map<string, ProfileWrite>();
  const write = (projectId: number, key: string, externalId: string | null, state: ProfileState, namedT?: number) => {
    const row = `${projectId}\u0000${key}`;
    const existing = byProfile.get(row);
    if (existing === undefined) byProfile.set(row, { projectId, key, externalId, state, namedT });
    else {
      existing.state = mergeStates(existing.state, state);
      existing.externalId ??= externalId;
      if (namedT !== undefined) existing.namedT = Math.max(existing.namedT ?? namedT, namedT);
    }
  };
  for (const operation of operations) {
    write(operation.projectId, operation.key, operation.id, stateFromOperation(operation));
  }
  // An id Postgres text cannot hold was refused with its operations: its row goes without it.
  for (const { projectId, newKey, newId, t } of reidentifies) {
    write(projectId, newKey, unstorableText(newId) === null ? newId : null, emptyState(), t);
  }
  for (const { projectId, keys, t } of erasures) for (const key of keys) write(projectId, key, null, erasureState(t));
  return [...byProfile.values()];
}

export interface ApplyOutcome {
  applied: number;
  /** As queued, when refused before it was keyed as stored. */
  poisoned: { operation: UnkeyedProfileOperation; error: unknown }[];
  ignoredTopics: { projectId: number; key: string; topicIds: string[] }[];
}

/**
 * Applies identifies, edits, tags and subscriptions, and the rows the job's deletes erase and its
 * reidentifies name, in one statement; operations refused as input are reported as poisoned and
 * every other one is applied (applyIsolatingRefused). The erasures and the new ids' rows go with
 * each part written, and alone when no part was: when every operation was refused too.
 */
export async function applyStateOperations(
  sql: Sql,
  operations: readonly StateOperation[],
  erasures: readonly Erasure[] = [],
  reidentifies: readonly ReidentifyOperation[] = [],
): Promise<ApplyOutcome> {
  const outcome: ApplyOutcome = { applied: 0, poisoned: [], ignoredTopics: [] };
  await applyIsolatingRefused(
    operations,
    async (part) => {
      const result = await applyProfileWrites(sql, profileWrites(part, erasures, reidentifies));
      outcome.applied += part.length;
      outcome.ignoredTopics.push(...result.ignoredTopics);
    },
    (operation, error) => outcome.poisoned.push({ operation, error }),
  );
  if (outcome.applied === 0 && erasures.length + reidentifies.length > 0) {
    await applyProfileWrites(sql, profileWrites([], erasures, reidentifies));
  }
  return outcome;
}
