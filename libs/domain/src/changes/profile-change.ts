import { fieldMap, type Stamped } from "../kernel/stamp";
import type { ChangeType } from "./change-feed";

/**
 * A profile's change as the capture stores it (libs/db/functions/change_feed.sql): the values
 * that changed, still stamped, and the profile's creation stamp, from which its values are seen.
 * A field that did not change is null. A new profile's maps are whole: what a reader sees of
 * them is worked out here, where the capture would have read each of them key by key.
 */
interface StoredProfileChange {
  since: number;
  email: Stamped<unknown> | null;
  phone_number: Stamped<unknown> | null;
  data: Record<string, Stamped<unknown>> | null;
  channels: Record<string, Stamped<unknown>> | null;
}

/** A stamped value as the feed shows it: a cleared one (no `v`, or null) is null. */
const shown = (entry: Stamped<unknown>): unknown => entry.v ?? null;

/**
 * The entries of a stored map a reader sees, in the map's order: those stamped at or after the
 * profile's creation, and, in a new profile's change, not cleared (a key cleared that was never
 * seen is no change). The entries of a changed profile's map are those the capture found changed,
 * every one seen, a cleared one included (its value null).
 */
function seenEntries(map: Record<string, Stamped<unknown>> | null, since: number, created: boolean) {
  const entries: [string, unknown][] = [];
  for (const [key, entry] of Object.entries(map ?? {})) {
    const value = shown(entry);
    if (entry.t >= since && !(created && value === null)) entries.push([key, value]);
  }
  return entries;
}

/**
 * A change as the feed serves it (docs/changes.md, "Types"), from the change as stored. A
 * profile's change holds its fields as the reader of the profile sees them: `email` and
 * `phone_number` when they changed, `data` with the keys that changed, `channels` as the list of
 * the channels that changed; a field without a change is left out. Its keys come in the order
 * the feed served them in when the capture built the change as jsonb (shorter keys first), and
 * so do those of `data`. Every other change, and a profile's change stored before the capture
 * stored stamped values (it has no `since`), is served as it is stored.
 */
export function feedChange(type: ChangeType, stored: Record<string, unknown>): Record<string, unknown> {
  if ((type !== "profile.created" && type !== "profile.changed") || !("since" in stored)) return stored;
  const { since, email, phone_number, data, channels } = stored as unknown as StoredProfileChange;
  const created = type === "profile.created";
  const change: Record<string, unknown> = {};
  const seenData = seenEntries(data, since, created);
  if (seenData.length > 0) {
    const shownData = fieldMap<unknown>();
    for (const [key, value] of seenData) shownData[key] = value;
    change.data = shownData;
  }
  if (email !== null) change.email = shown(email);
  const seenChannels = seenEntries(channels, since, created);
  if (seenChannels.length > 0) change.channels = seenChannels.map(([, channel]) => channel);
  if (phone_number !== null) change.phone_number = shown(phone_number);
  return change;
}
