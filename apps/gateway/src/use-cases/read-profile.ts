import { allTopicsOfProject, findLinkedProfile, userEventSummary } from "@cm/db";
import {
  linkedState,
  topicSubscriptions,
  unstorableText,
  visibleProfile,
  type Profile,
  type ProfileKeyOf,
} from "@cm/domain";
import type { GatewayDeps } from "../deps";
import { NotFound } from "./errors";

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
  const state = linkedState(rows.map((row) => row.state));
  const profile = visibleProfile(state);
  if (profile === null) throw new NotFound("profile");
  const [topics, events] = await Promise.all([
    allTopicsOfProject(deps.sql, projectId),
    userEventSummary(deps.sql, projectId, keys),
  ]);
  const updatedAt = Math.max(...rows.map((row) => row.updatedAt.getTime()));
  return {
    id: rows.find((row) => row.key === key)?.externalId ?? ref,
    email: profile.email,
    phone_number: profile.phoneNumber,
    channels: profile.channels,
    data: profile.data,
    tags: profile.tags,
    unsubscribed: profile.unsubscribed,
    topics: topicSubscriptions(profile.topics, topics, profile.unsubscribed),
    event_count: events.count,
    last_event_at: events.last?.toISOString() ?? null,
    created_at: new Date(state.createdT as number).toISOString(),
    updated_at: new Date(updatedAt).toISOString(),
  };
}
