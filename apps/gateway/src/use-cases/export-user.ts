import { Readable } from "node:stream";
import { deadLettersOfProfiles, everyUserEvent, userEventOf } from "@cm/db";
import type { ProfileKeyOf, UserExport } from "@cm/domain";
import type { GatewayDeps } from "../deps";
import { NotFound } from "./errors";
import { linkedProfileOf } from "./read-profile";

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
  const { keys, rows, eventSummaries, profile } = await linkedProfileOf(deps, projectId, ref, keyOf);
  const deadLetters = await deadLettersOfProfiles(deps.sql, projectId, keys);
  if (profile === null && eventSummaries.size === 0 && deadLetters.length === 0) throw new NotFound("profile");

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
