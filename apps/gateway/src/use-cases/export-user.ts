import { Readable } from "node:stream";
import {
  allTopicsOfProject,
  deadLettersOfProfiles,
  eventSummaries,
  everyUserEvent,
  findLinkedProfile,
  userEventOf,
} from "@cm/db";
import { unstorableText, type ProfileKeyOf, type UserExport } from "@cm/domain";
import type { GatewayDeps } from "../deps";
import { NotFound } from "./errors";
import { profileResource } from "./profile-resource";

const EVENTS_PER_READ = 500;

/**
 * docs/api.md "Export a user": everything stored about the user `ref` names, its linked ids'
 * included, as one JSON document (UserExport) for a data-subject access request. The events are
 * streamed from a cursor, so that a user with many costs the gateway no more memory than a few.
 * A user of whom nothing is stored is unknown (404).
 */
export async function exportUser(
  deps: Pick<GatewayDeps, "sql">,
  projectId: number,
  ref: string,
  keyOf: ProfileKeyOf,
): Promise<Readable> {
  if (unstorableText(ref) !== null) throw new NotFound("profile");
  const { key, keys, rows } = await findLinkedProfile(deps.sql, projectId, keyOf(projectId, ref));
  const [topics, summaries, deadLetters] = await Promise.all([
    allTopicsOfProject(deps.sql, projectId),
    eventSummaries(deps.sql, projectId, keys),
    deadLettersOfProfiles(deps.sql, projectId, keys),
  ]);
  const shownId = rows.find((row) => row.key === key)?.externalId ?? ref;
  const profile = profileResource({ id: shownId, keys, rows }, topics, summaries);
  if (profile === null && summaries.size === 0 && deadLetters.length === 0) throw new NotFound("profile");

  const head: Omit<UserExport, "events"> = {
    id: ref,
    exported_at: new Date().toISOString(),
    profile,
    ids: [...new Set(rows.flatMap((row) => row.externalId ?? []))].sort(),
    dead_letters: deadLetters.map((letter) => ({ ...letter, created_at: letter.created_at.toISOString() })),
  };
  async function* document() {
    yield `${JSON.stringify(head).slice(0, -1)},"events":[`;
    let first = true;
    for await (const events of everyUserEvent(deps.sql, projectId, keys, EVENTS_PER_READ)) {
      const text = events.map((event) => JSON.stringify(userEventOf(event))).join(",");
      yield first ? text : `,${text}`;
      first = false;
    }
    yield "]}";
  }
  return Readable.from(document());
}
