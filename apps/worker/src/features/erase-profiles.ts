import { isStateOperation, profileIdOf, profileKeyForId, type ProfileOperation } from "@cm/domain";
import { removeFromFailedIdentifyJobs, type IdentifyJobData } from "@cm/queue";
import type { Queue } from "bullmq";

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
function isErasedBy(operation: ProfileOperation, erasure: Erasure): boolean {
  return (
    isStateOperation(operation) &&
    operation.projectId === erasure.projectId &&
    operation.t <= erasure.t &&
    erasure.keys.includes(profileKeyForId(profileIdOf(operation)))
  );
}

/** The erased profiles' operations leave the failed jobs kept in Redis. */
export async function eraseFromFailedJobs(queue: Queue<IdentifyJobData>, erasures: readonly Erasure[]): Promise<void> {
  if (erasures.length === 0) return;
  await removeFromFailedIdentifyJobs(queue, (operation) => erasures.some((erasure) => isErasedBy(operation, erasure)));
}
