import { Readable } from "node:stream";
import { deadLettersOfProfiles, userEventOf, userEventsAfter, type EventPage, type EventPosition } from "@cm/db";
import type { ProfileKeyOf, UserExport } from "@cm/domain";
import type { ProjectShares, Store } from "../deps";
import { NotFound } from "../errors";
import { linkedProfileOf } from "./read-profile";

/** Events a page: the most an export holds at once is about two pages (one written, one read). */
const EXPORT_EVENTS_PER_PAGE = 100;

/**
 * docs/api.md "Export a user": everything stored about the user `ref` names, its linked ids'
 * included, as one JSON document (UserExport) for a data-subject access request. The events are
 * read a page at a time, and a page only once the client took the one before: a user with many
 * costs the gateway no more memory than a few, and a client that stops reading holds no database
 * connection (each page is a query of its own). A user of whom nothing is stored is unknown (404).
 */
export async function exportUser(
  deps: Store & { poolShares: ProjectShares },
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
  // Read after the operation ended, as the client takes the document: within its share again.
  const pageAfter = (after: EventPosition | null): Promise<EventPage> =>
    deps.poolShares.run(projectId, () => userEventsAfter(deps.sql, projectId, keys, after, EXPORT_EVENTS_PER_PAGE));
  async function* document() {
    yield `${JSON.stringify(head).slice(0, -1)},"events":[`;
    let separator = "";
    let after: EventPosition | null = null;
    do {
      const page = await pageAfter(after);
      if (page.events.length > 0) {
        yield separator + page.events.map((event) => JSON.stringify(userEventOf(event))).join(",");
        separator = ",";
      }
      after = page.next;
    } while (after !== null);
    yield "]}";
  }
  // One page read ahead at most: the next is read when the socket took this one.
  return Readable.from(document(), { highWaterMark: 1 });
}
