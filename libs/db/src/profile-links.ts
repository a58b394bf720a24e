import { aliasGroup, canonicalKey, MAX_LINKED_IDS, type AliasEdge } from "@cm/domain";
import { PROFILE_LINKS_LOCK } from "./advisory-locks";
import type { Db } from "./connect";
import { jsonParameter } from "./json";
import { findProfiles, type StoredProfile } from "./profiles";
import type { RecordedErasure } from "./profile-erasures";

/** The ids linked with some keys: every link between them, and what was recorded of them. */
export interface LinkedComponents {
  links: AliasEdge[];
  erasures: RecordedErasure[];
}

/** A reidentify's link, with the ids of its two keys as the change feed names them (null: an id Postgres text cannot hold). */
export interface NewLink extends AliasEdge {
  fromId: string | null;
  toId: string | null;
}

/**
 * Records a job's reidentify links and delete erasures of one project, then, holding the
 * project's PROFILE_LINKS_LOCK, reads the components of `keys`: one statement, in a transaction
 * of its own (libs/db/functions/record_link_operations.sql says why). Jobs doing the same take turns, and
 * each reads what those before it recorded, so an erasure reaches every id linked before it. A
 * link that would make a profile of more than MAX_LINKED_IDS ids fails it. Each link recorded
 * now is a user.reidentified change of the feed (docs/changes.md).
 */
export async function recordLinkOperations(
  sql: Db,
  projectId: number,
  links: readonly NewLink[],
  erasures: readonly RecordedErasure[],
  keys: readonly string[],
): Promise<LinkedComponents> {
  const [row] = await sql<{ components: LinkedComponents }[]>`
    SELECT record_link_operations(${projectId}::integer, ${PROFILE_LINKS_LOCK}::integer, ${jsonParameter(
      sql,
      links.map(({ fromId, toId, ...link }) => ({ ...link, from_id: fromId, to_id: toId })),
    )},
                                  ${jsonParameter(sql, erasures)}, ${keys as string[]}::text[],
                                  ${MAX_LINKED_IDS}::integer) AS components`;
  return (row as { components: LinkedComponents }).components;
}

/**
 * Every link of the ids linked with any of `keys`, in either direction and whatever their
 * stamps (all that libs/domain's aliasGroup and canonicalKey need to answer for those keys;
 * none for ids never reidentified), and the recorded erasures of those ids.
 */
export async function linkedComponents(sql: Db, projectId: number, keys: readonly string[]): Promise<LinkedComponents> {
  const [row] = await sql<{ components: LinkedComponents }[]>`
    SELECT profile_components(${projectId}::integer, ${keys as string[]}::text[]) AS components`;
  return (row as { components: LinkedComponents }).components;
}

/** The rows of one profile: those of every id linked with `key` (`keys`), and the key it is known by. */
export interface LinkedProfile {
  key: string;
  keys: string[];
  rows: StoredProfile[];
}

/** Every id linked with `key` by reidentifies, `key` included. */
export async function linkedKeys(sql: Db, projectId: number, key: string): Promise<string[]> {
  const { links } = await linkedComponents(sql, projectId, [key]);
  return aliasGroup(links, key);
}

/** The profile `key` names, as the profile read shows it (libs/domain's visibleProfile of the rows). */
export async function findLinkedProfile(sql: Db, projectId: number, key: string): Promise<LinkedProfile> {
  const { links } = await linkedComponents(sql, projectId, [key]);
  const keys = aliasGroup(links, key);
  return { key: canonicalKey(links, key), keys, rows: await findProfiles(sql, projectId, keys) };
}
