import type { Sql } from "@cm/db";
import {
  isLinkOperation,
  isStateOperation,
  withStoredKeys,
  type ReidentifyOperation,
  type UnkeyedProfileOperation,
} from "@cm/domain";
import type { IntakeQueues } from "@cm/queue";
import { applyLinkOperations } from "./apply-link-operations";
import { applyStateOperations, type ApplyOutcome } from "./apply-state-operations";
import { eraseFromIntakeLog, type IntakeLogStores } from "./erase-intake-log";
import { eraseEvents, eraseFromFailedJobs, type Erasure } from "./erase-profiles";
import { applyIsolatingRefused } from "../isolate-refused";
import { keyedForStorage, type ProfileKeys } from "./profile-keys";

/** Where a profile's data is kept, and so where an erasure must reach. */
/** The intake queues' failed jobs hold the operations and events they could not apply: every shard of each (INTAKE_QUEUE_SHARDS). */
export interface ProfileStores extends IntakeQueues, IntakeLogStores {
  sql: Sql;
  /** Profiles are stored under keyed hashes of their ids. */
  profileKeys: ProfileKeys;
}

/**
 * Applies a job's operations (of kinds this release knows: the worker leaves a job holding another
 * alone, forKnownKind), keyed as stored (an operation of a project that no longer exists is
 * refused), in any order (docs/profiles.md: the result does not depend on it).
 * Deletes and reidentifies first, in one transaction per project (recording the links and
 * erasures, working out which rows each erasure reaches); then identifies, edits, tags,
 * subscriptions, those erasures and the new ids' rows, merged per profile row and written in one
 * statement; then
 * the erased profiles' events, stored or in failed jobs. Refused input is reported as poisoned
 * and everything else is applied; other errors are thrown, for the queue to retry the whole job
 * (applying an operation again changes nothing).
 */
export async function applyProfileOperations(
  stores: ProfileStores,
  queued: readonly UnkeyedProfileOperation[],
): Promise<ApplyOutcome> {
  const { keyed: operations, refused } = await keyedForStorage(stores.profileKeys, queued, withStoredKeys);
  const erasures: Erasure[] = [];
  const reidentifies: ReidentifyOperation[] = [];
  let linksApplied = 0;
  const linksPoisoned: ApplyOutcome["poisoned"] = refused.map(({ item, error }) => ({ operation: item, error }));
  await applyIsolatingRefused(
    operations.filter(isLinkOperation),
    async (part) => {
      erasures.push(...(await applyLinkOperations(stores.sql, part)));
      linksApplied += part.length;
      reidentifies.push(...part.filter((operation) => operation.op === "reidentify"));
    },
    (operation, error) => linksPoisoned.push({ operation, error }),
  );
  const outcome = await applyStateOperations(stores.sql, operations.filter(isStateOperation), erasures, reidentifies);
  outcome.applied += linksApplied;
  outcome.poisoned.push(...linksPoisoned);
  await eraseEvents(stores.sql, erasures);
  await eraseFromFailedJobs(stores, erasures);
  await eraseFromIntakeLog(stores, erasures);
  return outcome;
}
