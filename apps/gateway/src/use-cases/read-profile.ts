import { allTopicsOfProject, eventSummaries, findLinkedProfile } from "@cm/db";
import { unstorableText, type Profile, type ProfileKeyOf } from "@cm/domain";
import type { GatewayDeps } from "../deps";
import { NotFound } from "./errors";
import { profileResource } from "./profile-resource";

/**
 * decisions.md "Profile read": what the workers have applied so far, by the user's id or email,
 * or by any id it had before a reidentify: the rows of every id linked with it, merged field by
 * field (docs/profiles.md), shown under the id of its latest reidentify (or `ref` when an
 * erasure left that id's row without its id and an identify of `ref` since made it a profile).
 */
export async function readProfile(
  deps: Pick<GatewayDeps, "sql">,
  projectId: number,
  ref: string,
  keyOf: ProfileKeyOf,
): Promise<Profile> {
  // An id Postgres text cannot hold (U+0000, a lone surrogate) was never stored.
  if (unstorableText(ref) !== null) throw new NotFound("profile");
  const { key, keys, rows } = await findLinkedProfile(deps.sql, projectId, keyOf(projectId, ref));
  const [topics, events] = await Promise.all([
    allTopicsOfProject(deps.sql, projectId),
    eventSummaries(deps.sql, projectId, keys),
  ]);
  const id = rows.find((row) => row.key === key)?.externalId ?? ref;
  const profile = profileResource({ id, keys, rows }, topics, events);
  if (profile === null) throw new NotFound("profile");
  return profile;
}
