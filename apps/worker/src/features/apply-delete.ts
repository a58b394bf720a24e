import { linksOfComponent, PROFILE_LINKS_LOCK, recordErasure, takeProjectAdvisoryLock, type Sql } from "@cm/db";
import { aliasGroup, type DeleteOperation } from "@cm/domain";
import { eraseStoredProfiles, type Erasure } from "./erase-profiles";

/**
 * docs/profiles.md "Delete": the erasure is recorded (a reidentify stamped before it and applied
 * after it must still reach it, see apply-reidentify), then merged into the row of every id
 * linked with the deleted one at its stamp. Returns the erasure applied.
 */
export async function applyDelete(sql: Sql, operation: DeleteOperation): Promise<Erasure[]> {
  const { projectId, key, t } = operation;
  return sql.begin(async (tx) => {
    await takeProjectAdvisoryLock(tx, PROFILE_LINKS_LOCK, projectId);
    await recordErasure(tx, projectId, { key, t });
    const erasure = { projectId, keys: aliasGroup(await linksOfComponent(tx, projectId, key), key, t), t };
    await eraseStoredProfiles(tx, erasure);
    return [erasure];
  });
}
