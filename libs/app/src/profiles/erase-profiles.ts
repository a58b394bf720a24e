import { eraseUserEvents, type Sql } from "@cm/db";
import {
  isStateOperation,
  withStoredKeys,
  type ProfileKeyOf,
  type UnkeyedEvent,
  type UnkeyedProfileOperation,
} from "@cm/domain";
import { removeFromFailedJobs, type IntakeQueues } from "@cm/queue";
import type { ProfileKeys } from "./profile-keys";

/** An erasure stamped `t` of the rows of these keys: one profile's ids, linked at or before `t`. */
export interface Erasure {
  projectId: number;
  keys: string[];
  t: number;
}

/**
 * Delete and reidentify operations hold only ids and stamps, which an erasure keeps; an
 * operation stamped after the erasure belongs to the profile an identify may start anew.
 */
function isErasedBy(operation: UnkeyedProfileOperation, erasure: Erasure, keyOf: ProfileKeyOf): boolean {
  if (operation.projectId !== erasure.projectId || operation.t > erasure.t) return false;
  const keyed = withStoredKeys(operation, keyOf);
  return isStateOperation(keyed) && erasure.keys.includes(keyed.key);
}

/** An event is erased like an operation: its user's erasure is stamped at or after it. */
function isEventErasedBy(event: UnkeyedEvent, erasure: Erasure, keyOf: ProfileKeyOf): boolean {
  return (
    event.projectId === erasure.projectId &&
    event.t <= erasure.t &&
    erasure.keys.includes(keyOf(event.projectId, event.userId))
  );
}

/** The erased profiles' operations and events leave the failed jobs kept in Redis, where they are queued as sent. */
export async function eraseFromFailedJobs(
  stores: IntakeQueues & { profileKeys: ProfileKeys },
  erasures: readonly Erasure[],
): Promise<void> {
  if (erasures.length === 0) return;
  const keyOf = await stores.profileKeys(erasures.map((erasure) => erasure.projectId));
  // Every shard: an erasure reaches the profiles linked to its user, whose ids may be queued in others.
  for (const queue of stores.profileOperationsQueues) {
    await removeFromFailedJobs(queue, (operation) => erasures.some((erasure) => isErasedBy(operation, erasure, keyOf)));
  }
  for (const queue of stores.eventsQueues) {
    await removeFromFailedJobs(queue, (event) => erasures.some((erasure) => isEventErasedBy(event, erasure, keyOf)));
  }
}

/** The erased profiles' stored events go; those still queued are dropped when a worker stores them. */
export async function eraseEvents(sql: Sql, erasures: readonly Erasure[]): Promise<void> {
  const byProject = new Map<number, { key: string; t: number }[]>();
  for (const { projectId, keys, t } of erasures) {
    const erased = byProject.get(projectId) ?? [];
    erased.push(...keys.map((key) => ({ key, t })));
    byProject.set(projectId, erased);
  }
  for (const [projectId, erased] of byProject) await eraseUserEvents(sql, projectId, erased);
}
