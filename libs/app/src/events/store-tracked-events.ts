import { storeEvents } from "@cm/db";
import { collapseDuplicateEvents, eventWithStoredKey, profileCreations, type UnkeyedEvent } from "@cm/domain";
import { applyProfileOperations, type ProfileStores } from "../profiles/apply-profile-operations";
import { applyIsolatingRefused } from "../isolate-refused";
import { keyedForStorage } from "../profiles/profile-keys";

export interface TrackOutcome {
  stored: number;
  /** Not stored: another event with the same deduplication key was, or erased before it was stored. */
  skipped: number;
  /** Events (and the profile creations they asked for) that Postgres or our code refused. */
  poisoned: { item: unknown; error: unknown }[];
}

/**
 * A job's events (docs/events.md), keyed as stored: stored once each, in one statement (more when refused input
 * has to be isolated); then, as in Vero, a profile made for each user who is none yet. Users who
 * are profiles already are not written: an event costs no profile merge.
 */
export async function storeTrackedEvents(
  stores: ProfileStores,
  events: readonly UnkeyedEvent[],
): Promise<TrackOutcome> {
  const { keyed, refused } = await keyedForStorage(stores.profileKeys, events, eventWithStoredKey);
  const { kept } = collapseDuplicateEvents(keyed);
  let stored = 0;
  const notProfiles: { projectId: number; key: string }[] = [];
  const poisoned: TrackOutcome["poisoned"] = [...refused];
  await applyIsolatingRefused(
    kept,
    async (part) => {
      const result = await storeEvents(stores.sql, part);
      stored += result.stored;
      notProfiles.push(...result.notProfiles);
    },
    (item, error) => poisoned.push({ item, error }),
  );
  const skipped = events.length - stored - poisoned.length;
  const created = await applyProfileOperations(stores, profileCreations(kept, notProfiles));
  for (const { operation, error } of created.poisoned) poisoned.push({ item: operation, error });
  return { stored, skipped, poisoned };
}
