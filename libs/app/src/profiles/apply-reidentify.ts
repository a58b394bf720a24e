import type { NewLink, RecordedErasure } from "@cm/db";
import { aliasGroup, unstorableText, type AliasEdge, type ReidentifyOperation } from "@cm/domain";
import type { Erasure } from "./erase-profiles";

/** The link a reidentify records: from its stamp on, the old id's profile is known by the new one. */
export const linkOf = (operation: ReidentifyOperation): AliasEdge => ({
  from: operation.key,
  to: operation.newKey,
  t: operation.t,
});

/** The link with the ids the change feed names it by (an id Postgres text cannot hold goes without). */
export const newLinkOf = (operation: ReidentifyOperation): NewLink => ({
  ...linkOf(operation),
  fromId: unstorableText(operation.id) === null ? operation.id : null,
  toId: unstorableText(operation.newId) === null ? operation.newId : null,
});

/**
 * docs/profiles.md "Reidentify": the read merges the rows of linked ids, so recording the link
 * is all a reidentify does, except that an erasure of a now-linked id stamped at or after the
 * link must reach every id linked at its stamp, this link's included, whichever of the two was
 * applied first: each such erasure is applied again (an erasure applied twice changes nothing).
 */
export function reidentifyErasures(
  links: readonly AliasEdge[],
  reidentifies: readonly ReidentifyOperation[],
  recorded: readonly RecordedErasure[],
): Erasure[] {
  return reidentifies.flatMap((operation) => {
    const linked = new Set(aliasGroup(links, operation.key));
    return recorded
      .filter((erased) => erased.t >= operation.t && linked.has(erased.key))
      .map((erased) => ({
        projectId: operation.projectId,
        keys: aliasGroup(links, erased.key, erased.t),
        t: erased.t,
      }));
  });
}
