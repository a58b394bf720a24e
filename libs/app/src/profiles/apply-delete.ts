import type { AliasEdge, DeleteOperation } from "@cm/domain";
import { aliasGroup } from "@cm/domain";
import type { Erasure } from "./erase-profiles";

/**
 * docs/profiles.md "Delete": each delete erases the row of every id linked with the deleted one
 * at its stamp. `links` holds every link of their components, this job's included; the delete
 * is recorded too (by apply-link-operations), so that a reidentify stamped before it and
 * applied after it still reaches it (apply-reidentify).
 */
export function deleteErasures(links: readonly AliasEdge[], deletes: readonly DeleteOperation[]): Erasure[] {
  return deletes.map(({ projectId, key, t }) => ({ projectId, keys: aliasGroup(links, key, t), t }));
}
