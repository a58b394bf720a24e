import { findUserEvents, linkedKeys, userEventOf } from "@cm/db";
import { eventCursor, unstorableText, type EventPageRequest, type ProfileKeyOf, type UserEventPage } from "@cm/domain";
import type { Store } from "../deps";

/**
 * docs/events.md "Read": a page of the events of the user `ref` names, newest first, those of
 * every id linked with it by a reidentify included. A user without events has an empty page,
 * whether or not it is a profile: events are kept apart from the profile.
 */
export async function listUserEvents(
  deps: Store,
  projectId: number,
  ref: string,
  page: EventPageRequest,
  keyOf: ProfileKeyOf,
): Promise<UserEventPage> {
  if (unstorableText(ref) !== null) return { data: [], next_cursor: null };
  const keys = await linkedKeys(deps.sql, projectId, keyOf(projectId, ref));
  const rows = await findUserEvents(deps.sql, projectId, keys, {
    nameKey: page.nameKey,
    since: page.since === null ? null : new Date(page.since),
    until: page.until === null ? null : new Date(page.until),
    after: page.after === null ? null : { createdAt: new Date(page.after.t), id: page.after.id },
    limit: page.limit,
  });
  const shown = rows.slice(0, page.limit);
  const last = shown[shown.length - 1];
  return {
    data: shown.map(userEventOf),
    next_cursor:
      rows.length > page.limit && last !== undefined ? eventCursor(last.created_at.getTime(), last.id) : null,
  };
}
