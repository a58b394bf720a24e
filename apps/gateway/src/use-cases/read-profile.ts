import { allTopicsOfProject, findProfile } from "@cm/db";
import { profileKeyForId, topicSubscriptions, unstorableText, visibleProfile, type Profile } from "@cm/domain";
import type { GatewayDeps } from "../deps";
import { NotFound } from "./errors";

/** decisions.md "Profile read": what the workers have applied so far, by the user's id or email. */
export async function readProfile(deps: Pick<GatewayDeps, "sql">, projectId: number, ref: string): Promise<Profile> {
  // An id Postgres text cannot hold (U+0000, a lone surrogate) was never stored.
  if (unstorableText(ref) !== null) throw new NotFound("profile");
  const stored = await findProfile(deps.sql, projectId, profileKeyForId(ref));
  const profile = stored && visibleProfile(stored.state);
  if (stored === null || profile === null) throw new NotFound("profile");
  const topics = await allTopicsOfProject(deps.sql, projectId);
  return {
    id: stored.externalId ?? ref,
    email: profile.email,
    phone_number: profile.phoneNumber,
    channels: profile.channels,
    data: profile.data,
    topics: topicSubscriptions(profile.topics, topics),
    created_at: new Date(stored.state.createdT as number).toISOString(),
    updated_at: stored.updatedAt.toISOString(),
  };
}
