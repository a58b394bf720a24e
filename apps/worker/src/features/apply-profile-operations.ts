import { isRefusedInput, type Sql } from "@cm/db";
import { isStateOperation, type ProfileOperation } from "@cm/domain";
import type { IdentifyJobData } from "@cm/queue";
import type { Queue } from "bullmq";
import { applyDelete } from "./apply-delete";
import { applyReidentify } from "./apply-reidentify";
import { applyStateOperations, type ApplyOutcome } from "./apply-state-operations";
import { eraseFromFailedJobs, type Erasure } from "./erase-profiles";

/** Where a profile's data is kept, and so where an erasure must reach. */
export interface ProfileStores {
  sql: Sql;
  /** Its failed jobs hold the operations they could not apply. */
  identifyQueue: Queue<IdentifyJobData>;
}

/**
 * Applies a job's operations, in any order (docs/profiles.md: the result does not depend on it).
 * Identifies, edits, tags and subscriptions are merged per profile and written in one statement;
 * deletes and reidentifies, rare, each in a transaction of its own. Refused input is reported as
 * poisoned and everything else is applied; other errors are thrown, for the queue to retry the
 * whole job (applying an operation again changes nothing).
 */
export async function applyProfileOperations(
  stores: ProfileStores,
  operations: readonly ProfileOperation[],
): Promise<ApplyOutcome> {
  const outcome = await applyStateOperations(stores.sql, operations.filter(isStateOperation));
  for (const operation of operations) {
    if (isStateOperation(operation)) continue;
    let erasures: Erasure[];
    try {
      erasures =
        operation.op === "delete"
          ? await applyDelete(stores.sql, operation)
          : await applyReidentify(stores.sql, operation);
    } catch (error) {
      if (!isRefusedInput(error)) throw error;
      outcome.poisoned.push({ operation, error });
      continue;
    }
    outcome.applied += 1;
    // Apart from the refused-input test: an error of Redis says nothing about the input.
    await eraseFromFailedJobs(stores.identifyQueue, erasures);
  }
  return outcome;
}
