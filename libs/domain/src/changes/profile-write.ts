import { fieldMap, type Stamped } from "../kernel/stamp";
import type { ChangeType } from "./change-feed";
import { feedChange } from "./profile-change";

type StampedMap = Record<string, Stamped<unknown>>;

/**
 * A profile row as the capture stores it before and after a write (migration 025, the type
 * profile_image): its columns as they are, the values still stamped. An erasure's row before holds
 * only the id and the stamps of the profile's life: its other columns are null.
 */
export interface ProfileImage {
  external_id: string | null;
  created_t: number | null;
  last_created_t: number | null;
  deleted_t: number | null;
  email: Stamped<unknown> | null;
  phone_number: Stamped<unknown> | null;
  unsubscribed: Stamped<unknown> | null;
  data: StampedMap | null;
  channels: StampedMap | null;
  tags: StampedMap | null;
  topic_choices: StampedMap | null;
  topic_defaults: Record<string, unknown> | null;
}

/** A change of the feed, as a profile's write made it. */
export interface ProfileWriteChange {
  type: ChangeType;
  userId: string | null;
  change: Record<string, unknown>;
}

/** The map's own entry for `key` (a data key may be named `constructor`). */
const own = <V>(map: Record<string, V> | null | undefined, key: string): V | undefined =>
  map != null && Object.hasOwn(map, key) ? map[key] : undefined;

const isEmpty = (map: object | null | undefined) => map == null || Object.keys(map).length === 0;

/** Equal as jsonb: the same JSON, read from the same canonical text (undefined: no value at all). */
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * A stamped value as a reader of the profile sees it: its value (null when cleared) when stamped
 * at or after the profile's creation `since`; undefined when not seen (stamped before, no value, or
 * no profile: `since` null). The rule of libs/domain visiblePart.
 */
function seen(stamped: Stamped<unknown> | null | undefined, since: number | null): unknown {
  if (stamped == null || since === null || !(stamped.t >= since)) return undefined;
  return stamped.v ?? null;
}

/** The stamp from which a row's values are seen: its creation, while it is a profile (profileExists). */
const profileSince = (image: ProfileImage) =>
  image.created_t !== null && (image.last_created_t !== null || image.deleted_t === null) ? image.created_t : null;

/**
 * The entries of a map (data, channels) that the write changed, still stamped, as feedChange
 * takes them: a new profile's whole map (feedChange keeps what is seen); else the entries whose
 * seen value differs from the one before, a cleared one included (a key cleared that was not seen
 * is no change). Null when none.
 */
function changedEntries(now: StampedMap | null, before: StampedMap | null, since: number, beforeSince: number | null) {
  if (isEmpty(now)) return null;
  if (beforeSince === null) return now;
  if (same(now, before) && since === beforeSince) return null;
  const changed = fieldMap<Stamped<unknown>>();
  for (const [key, entry] of Object.entries(now ?? {})) {
    if (!(entry?.t >= since)) continue;
    const was = own(before, key);
    const value = entry.v ?? null;
    const unchanged = was != null && was.t >= beforeSince ? same(value, was.v ?? null) : value === null;
    if (!unchanged) changed[key] = entry;
  }
  return isEmpty(changed) ? null : changed;
}

/** A register (email, phone_number) as feedChange takes it: the stamped value when its seen value changed. */
function changedRegister(
  now: Stamped<unknown> | null,
  before: Stamped<unknown> | null,
  since: number,
  beforeSince: number | null,
) {
  const value = seen(now, since);
  return value !== undefined && !same(value, seen(before, beforeSince)) ? now : null;
}

/**
 * The seen values of a map (tags, topic choices) that differ from what was seen before (a value
 * not seen before counts as null), by key; null when none.
 */
function changedValues(now: StampedMap | null, before: StampedMap | null, since: number, beforeSince: number | null) {
  if (isEmpty(now) || (same(now, before) && since === beforeSince)) return null;
  const changed = fieldMap<unknown>();
  for (const [key, entry] of Object.entries(now ?? {})) {
    const value = seen(entry, since);
    if (value !== undefined && !same(value, seen(own(before, key), beforeSince) ?? null)) changed[key] = value;
  }
  return isEmpty(changed) ? null : changed;
}

function tagsChange(now: ProfileImage, before: ProfileImage | null, since: number, beforeSince: number | null) {
  const changed = changedValues(now.tags, before?.tags ?? null, since, beforeSince);
  if (changed === null) return [];
  // A tag removed that was not on is no change.
  const tags = Object.entries(changed).filter(
    ([key, value]) => value === true || seen(own(before?.tags, key), beforeSince) === true,
  );
  if (tags.length === 0) return [];
  const named = (on: boolean) =>
    tags
      .filter(([, value]) => value === on)
      .map(([key]) => key)
      .sort();
  return [{ added: named(true), removed: named(false) }];
}

/** Explicit choices that changed, then the defaults a topic's fan-out gave where no choice is seen. */
function topicChanges(now: ProfileImage, before: ProfileImage | null, since: number, beforeSince: number | null) {
  const changes: Record<string, unknown>[] = [];
  const explicit = changedValues(now.topic_choices, before?.topic_choices ?? null, since, beforeSince);
  for (const [topic, status] of Object.entries(explicit ?? {})) {
    changes.push({ topic_id: Number(topic), status, source: "explicit" });
  }
  if (beforeSince !== null && !same(now.topic_defaults, before?.topic_defaults)) {
    for (const [topic, status] of Object.entries(now.topic_defaults ?? {})) {
      if (
        !same(status, own(before?.topic_defaults, topic)) &&
        seen(own(now.topic_choices, topic), since) === undefined
      ) {
        changes.push({ topic_id: Number(topic), status, source: "default" });
      }
    }
  }
  return changes;
}

/**
 * The feed's changes that a write of a profile row made (docs/changes.md, "Types"), from the row
 * before (null for a new row) and after, in the order the feed serves them: the erasure, the
 * profile's creation or change, its tags, its subscription, its topic choices. A row's values are
 * seen from its creation while it is a profile; an erasure leaves nothing seen of the row before it.
 */
export function profileWriteChanges(before: ProfileImage | null, now: ProfileImage): ProfileWriteChange[] {
  const erased = before === null ? now.deleted_t !== null : before.deleted_t !== now.deleted_t;
  const changes: ProfileWriteChange[] = [];
  if (erased && before !== null && before.external_id !== null) {
    changes.push({ type: "user.erased", userId: before.external_id, change: {} });
  }
  const since = profileSince(now);
  if (since === null) return changes;
  const beforeSince = before !== null && !erased ? profileSince(before) : null;
  const userId = now.external_id;
  const stored = {
    since,
    email: changedRegister(now.email, before?.email ?? null, since, beforeSince),
    phone_number: changedRegister(now.phone_number, before?.phone_number ?? null, since, beforeSince),
    data: changedEntries(now.data, before?.data ?? null, since, beforeSince),
    channels: changedEntries(now.channels, before?.channels ?? null, since, beforeSince),
  };
  const created = beforeSince === null;
  if (
    created ||
    stored.email !== null ||
    stored.phone_number !== null ||
    stored.data !== null ||
    stored.channels !== null
  ) {
    const type = created ? "profile.created" : "profile.changed";
    changes.push({ type, userId, change: feedChange(type, stored) });
  }
  for (const change of tagsChange(now, before, since, beforeSince)) {
    changes.push({ type: "tags.changed", userId, change });
  }
  const unsubscribed = seen(now.unsubscribed, since);
  const wasUnsubscribed = seen(before?.unsubscribed, beforeSince);
  if (
    !same(unsubscribed === undefined ? false : unsubscribed, wasUnsubscribed === undefined ? false : wasUnsubscribed)
  ) {
    changes.push({ type: unsubscribed === true ? "unsubscribed" : "resubscribed", userId, change: {} });
  }
  for (const change of topicChanges(now, before, since, beforeSince)) {
    changes.push({ type: "topic.choice_changed", userId, change });
  }
  return changes;
}
