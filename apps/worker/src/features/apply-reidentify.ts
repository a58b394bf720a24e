import {
  erasuresSince,
  linksOfComponent,
  PROFILE_LINKS_LOCK,
  recordProfileLink,
  takeProjectAdvisoryLock,
  type Sql,
} from "@cm/db";
import { aliasGroup, type ReidentifyOperation } from "@cm/domain";
import { eraseStoredProfiles, type Erasure } from "./erase-profiles";

/**
 * docs/profiles.md "Reidentify": the link is recorded; the read merges the rows of the linked
 * ids. An erasure of a now-linked id stamped at or after the link reaches every id linked at its
 * stamp, this link's included, whichever of the two was applied first: each such erasure is
 * applied again. Returns the erasures applied.
 */
export async function applyReidentify(sql: Sql, operation: ReidentifyOperation): Promise<Erasure[]> {
  const { projectId, t } = operation;
  const link = { from: operation.key, to: operation.newKey, t };
  return sql.begin(async (tx) => {
    await takeProjectAdvisoryLock(tx, PROFILE_LINKS_LOCK, projectId);
    await recordProfileLink(tx, projectId, link);
    const links = await linksOfComponent(tx, projectId, link.from);
    const erasures = (await erasuresSince(tx, projectId, aliasGroup(links, link.from), t)).map((erased): Erasure => ({
      projectId,
      keys: aliasGroup(links, erased.key, erased.t),
      t: erased.t,
    }));
    for (const erasure of erasures) await eraseStoredProfiles(tx, erasure);
    return erasures;
  });
}
