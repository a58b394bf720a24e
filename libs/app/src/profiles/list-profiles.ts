import { allTopicsOfProject, eventSummaries, findProfilePage } from "@cm/db";
import { profileCursor, type ProfileListRequest, type ProfilePage } from "@cm/domain";
import type { Store } from "../deps";
import { profileResource } from "./profile-resource";

/** docs/api.md "List users": a page of the project's profiles that pass the filter, each as the profile read shows it. */
export async function listProfiles(deps: Store, projectId: number, request: ProfileListRequest): Promise<ProfilePage> {
  const { profiles, nextAfterKey } = await findProfilePage(deps.sql, projectId, request);
  // One query at a time: an operation holds one connection of its project's share (PoolShares).
  const topics = await allTopicsOfProject(deps.sql, projectId);
  const events = await eventSummaries(
    deps.sql,
    projectId,
    profiles.flatMap((profile) => profile.keys),
  );
  return {
    data: profiles.map((profile) => profileResource(profile, topics, events)),
    next_cursor: nextAfterKey === null ? null : profileCursor(nextAfterKey),
  };
}
