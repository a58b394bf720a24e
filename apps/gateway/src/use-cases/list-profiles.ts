import { allTopicsOfProject, eventSummaries, findProfiles, linkedComponents, scanProfileList } from "@cm/db";
import {
  aliasGroup,
  canonicalKey,
  profileCursor,
  profilePassesFilter,
  rowPassesFilter,
  visibleProfile,
  linkedState,
  type ProfileListRequest,
  type ProfilePage,
} from "@cm/domain";
import type { GatewayDeps } from "../deps";
import { profileResource, profileUpdatedAt, type ProfileRows } from "./profile-resource";

/**
 * docs/api.md "List users": a page of the project's profiles that pass the filter, each as the
 * profile read shows it. The store lists rows; a reidentified user has one per id, so a profile
 * is listed at the first of its rows (in key order) that passes, and only there: once in the
 * whole list, whichever of its rows the filter finds.
 */
export async function listProfiles(
  deps: Pick<GatewayDeps, "sql">,
  projectId: number,
  request: ProfileListRequest,
): Promise<ProfilePage> {
  const { keys, nextAfterKey } = await scanProfileList(deps.sql, projectId, request);
  const { links } = await linkedComponents(deps.sql, projectId, keys);
  const groups = keys.map((key) => ({ key, keys: aliasGroup(links, key) }));
  const rows = await findProfiles(deps.sql, projectId, [...new Set(groups.flatMap((group) => group.keys))]);
  const rowOf = new Map(rows.map((row) => [row.key, row]));

  const listed: ProfileRows[] = [];
  for (const group of groups) {
    // In the store's key order (findProfiles'), which the scan and the cursor follow too.
    const inGroup = new Set(group.keys);
    const groupRows = rows.filter((row) => inGroup.has(row.key));
    const firstPassing = groupRows.find((row) => rowPassesFilter(row.state, row.updatedAt.getTime(), request.filter));
    if (firstPassing?.key !== group.key) continue;
    const profile = visibleProfile(linkedState(groupRows.map((row) => row.state)));
    if (profile === null || !profilePassesFilter(profile, profileUpdatedAt(groupRows), request.filter)) continue;
    const shownKey = canonicalKey(links, group.key);
    // The id of the latest reidentify, else (an erasure left that row without it) one the profile still holds.
    const id = [rowOf.get(shownKey), ...groupRows].find(
      (row) => row !== undefined && row.externalId !== null,
    )?.externalId;
    if (id === undefined || id === null) continue;
    listed.push({ id, keys: group.keys, rows: groupRows });
  }
  const [topics, events] = await Promise.all([
    allTopicsOfProject(deps.sql, projectId),
    eventSummaries(
      deps.sql,
      projectId,
      listed.flatMap((profile) => profile.keys),
    ),
  ]);
  return {
    data: listed.flatMap((profile) => profileResource(profile, topics, events) ?? []),
    next_cursor: nextAfterKey === null ? null : profileCursor(nextAfterKey),
  };
}
