import { removeIntakeRecords, type IntakeLogAt } from "@cm/queue";
import type { Erasure } from "./erase-profiles";
import type { ProfileKeys } from "./profile-keys";

/** Where the intake log is, for an erasure to reach it. */
export interface IntakeLogStores {
  intakeLog: Pick<IntakeLogAt, "redis" | "prefix">;
  profileKeys: ProfileKeys;
}

/**
 * The erased profiles' entries leave their projects' intake logs (docs/intake-log.md, "Erasure"):
 * every entry naming an id of an erased profile, whenever it was received, since the log keeps
 * bodies as sent. Each project's log is read once, whatever the number of its erasures.
 */
export async function eraseFromIntakeLog(stores: IntakeLogStores, erasures: readonly Erasure[]): Promise<void> {
  if (erasures.length === 0) return;
  const keyOf = await stores.profileKeys(erasures.map((erasure) => erasure.projectId));
  const erasedKeys = new Map<number, Set<string>>();
  for (const { projectId, keys } of erasures) {
    const of = erasedKeys.get(projectId) ?? new Set();
    for (const key of keys) of.add(key);
    erasedKeys.set(projectId, of);
  }
  for (const [projectId, keys] of erasedKeys) {
    await removeIntakeRecords(
      stores.intakeLog,
      projectId,
      (record) => record.userId !== null && keys.has(keyOf(projectId, record.userId)),
    );
  }
}
