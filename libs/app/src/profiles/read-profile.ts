import {
  allTopicsOfProject,
  eventSummaries,
  findLinkedProfile,
  shownProfile,
  type EventSummary,
  type StoredProfile,
} from "@cm/db";
import { unstorableText, type Profile, type ProfileKeyOf } from "@cm/domain";
import type { Store } from "../deps";
import { NotFound } from "../errors";
import { profileResource } from "./profile-resource";

/** What is stored of the user a reference names: its ids' rows and events, and its profile (null when none). */
export interface LinkedProfile {
  keys: string[];
  rows: StoredProfile[];
  eventSummaries: Map<string, EventSummary>;
  profile: Profile | null;
}

/**
 * The profile `ref` names, by the user's id or email, or by any id it had before a reidentify:
 * the rows of every id linked with it, merged field by field (docs/profiles.md), shown under the
 * id of its latest reidentify (or `ref` when an erasure left that id's row without its id and an
 * identify of `ref` since made it a profile). A `ref` Postgres text cannot hold (U+0000, a lone
 * surrogate) was never stored: NotFound.
 */
export async function linkedProfileOf(
  deps: Store,
  projectId: number,
  ref: string,
  keyOf: ProfileKeyOf,
): Promise<LinkedProfile> {
  if (unstorableText(ref) !== null) throw new NotFound("profile");
  const { key, keys, rows } = await findLinkedProfile(deps.sql, projectId, keyOf(projectId, ref));
  const shown = shownProfile(rows);
  // One query at a time: an operation holds one connection of its project's share (PoolShares).
  const topics = shown === null ? [] : await allTopicsOfProject(deps.sql, projectId);
  const summaries = await eventSummaries(deps.sql, projectId, keys);
  const id = rows.find((row) => row.key === key)?.externalId ?? ref;
  const profile = shown === null ? null : profileResource({ id, keys, rows, shown }, topics, summaries);
  return { keys, rows, eventSummaries: summaries, profile };
}

/** decisions.md "Profile read": what the workers have applied so far (linkedProfileOf). */
export async function readProfile(deps: Store, projectId: number, ref: string, keyOf: ProfileKeyOf): Promise<Profile> {
  const { profile } = await linkedProfileOf(deps, projectId, ref, keyOf);
  if (profile === null) throw new NotFound("profile");
  return profile;
}
