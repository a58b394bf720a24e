import type { Json } from "../kernel/json";
import { fieldMap, mergeStampedMapInto, mergeStampedMaps, newest, stamp, type Stamped } from "../kernel/stamp";
import type { TopicStatus } from "../topics/topic";
import type { ChannelValue } from "./identify";
import { operationKind, type StateOperation } from "./profile-operations";

/**
 * Everything written to one profile row, each field stamped with the update that wrote it.
 * Merging two states is commutative, associative and idempotent, so any order of updates and
 * any redelivery ends in the same state (docs/profiles.md states the rules).
 *
 * An identify that is not update_only may create the profile. `createdT` is the earliest such
 * stamp (never earlier than the last erasure), `lastCreatedT` the latest after the last
 * erasure: the profile exists while there is one. A field is visible when it was written at or
 * after `createdT`: an update that cannot create the profile applies exactly when the profile
 * was created at or before its stamp. An erasure (`deletedT`) removes every value stamped at or
 * before it, for good.
 */
export interface ProfileState {
  createdT: number | null;
  lastCreatedT: number | null;
  deletedT: number | null;
  email: Stamped<string> | null;
  phoneNumber: Stamped<string> | null;
  data: Record<string, Stamped<Json>>;
  channels: Record<string, Stamped<ChannelValue>>;
  topics: Record<string, Stamped<TopicStatus>>;
  /** A tag is on when its newest stamp says true (added), off when false (removed). */
  tags: Record<string, Stamped<boolean>>;
  /** The global opt-out: true after unsubscribe, false after resubscribe. */
  unsubscribed: Stamped<boolean> | null;
}

export function channelKey(channel: { type: string; address: string }): string {
  return `${channel.type}:${channel.address}`;
}

export function emptyState(): ProfileState {
  return {
    createdT: null,
    lastCreatedT: null,
    deletedT: null,
    email: null,
    phoneNumber: null,
    data: fieldMap(),
    channels: fieldMap(),
    topics: fieldMap(),
    tags: fieldMap(),
    unsubscribed: null,
  };
}

/** What an erasure at `t` merges into a profile row: nothing but its stamp. */
export function erasureState(t: number): ProfileState {
  return { ...emptyState(), deletedT: t };
}

/** Where a switch over every state operation ends: an operation added to the union fails to compile here. */
function unhandled(operation: never): never {
  throw new Error(`not a state operation: ${operationKind(operation)}`);
}

export function stateFromOperation(operation: StateOperation): ProfileState {
  const state = emptyState();
  const { t } = operation;
  switch (operation.op) {
    case undefined:
    case "identify":
      if (!operation.updateOnly) state.createdT = state.lastCreatedT = t;
      if (operation.email !== undefined) state.email = stamp(t, operation.email);
      if (operation.phoneNumber !== undefined) state.phoneNumber = stamp(t, operation.phoneNumber);
      for (const [key, value] of Object.entries(operation.data ?? {})) state.data[key] = stamp(t, value);
      for (const channel of operation.channels ?? []) state.channels[channelKey(channel)] = stamp(t, channel);
      for (const topic of operation.topics ?? []) state.topics[String(topic.id)] = stamp(t, topic.status);
      return state;
    case "edit":
      for (const [key, value] of Object.entries(operation.changes)) state.data[key] = stamp(t, value);
      return state;
    case "tags":
      // A tag both added and removed in one request is added: true's tie-breaker is the larger.
      for (const tag of operation.remove) state.tags[tag] = stamp(t, false);
      for (const tag of operation.add) state.tags[tag] = stamp(t, true);
      return state;
    case "subscription":
      state.unsubscribed = stamp(t, operation.unsubscribed);
      return state;
    default:
      return unhandled(operation);
  }
}

const earliest = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.min(a, b));
const latest = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.max(a, b));

function kept<V>(map: Record<string, Stamped<V>>, keep: (t: number) => boolean): Record<string, Stamped<V>> {
  const result = fieldMap<Stamped<V>>();
  for (const [key, entry] of Object.entries(map)) if (keep(entry.t)) result[key] = entry;
  return result;
}

/** The state without anything stamped at or before its last erasure. */
function erased(state: ProfileState): ProfileState {
  const d = state.deletedT;
  if (d === null) return state;
  const after = (t: number) => t > d;
  const register = <V>(entry: Stamped<V> | null) => (entry !== null && after(entry.t) ? entry : null);
  return {
    createdT: state.createdT === null ? null : Math.max(state.createdT, d),
    lastCreatedT: state.lastCreatedT !== null && state.lastCreatedT > d ? state.lastCreatedT : null,
    deletedT: d,
    email: register(state.email),
    phoneNumber: register(state.phoneNumber),
    data: kept(state.data, after),
    channels: kept(state.channels, after),
    topics: kept(state.topics, after),
    tags: kept(state.tags, after),
    unsubscribed: register(state.unsubscribed),
  };
}

export function mergeStates(a: ProfileState, b: ProfileState): ProfileState {
  return erased({
    createdT: earliest(a.createdT, b.createdT),
    lastCreatedT: latest(a.lastCreatedT, b.lastCreatedT),
    deletedT: latest(a.deletedT, b.deletedT),
    email: newest(a.email, b.email),
    phoneNumber: newest(a.phoneNumber, b.phoneNumber),
    data: mergeStampedMaps(a.data, b.data),
    channels: mergeStampedMaps(a.channels, b.channels),
    topics: mergeStampedMaps(a.topics, b.topics),
    tags: mergeStampedMaps(a.tags, b.tags),
    unsubscribed: newest(a.unsubscribed, b.unsubscribed),
  });
}

/**
 * The oldest and newest stamp a state holds (its values', createdT's, lastCreatedT's and
 * deletedT's), or null when it holds none. When every stamp of a write is newer than every stamp
 * of the row it is merged into, the merge is the write laid over the row (libs/db profiles.ts
 * takes that shortcut).
 */
export function stampBounds(state: ProfileState): { oldest: number; newest: number } | null {
  let oldest = Infinity;
  let newest = -Infinity;
  const see = (t: number | null) => {
    if (t === null) return;
    if (t < oldest) oldest = t;
    if (t > newest) newest = t;
  };
  see(state.createdT);
  see(state.lastCreatedT);
  see(state.deletedT);
  for (const register of [state.email, state.phoneNumber, state.unsubscribed]) see(register?.t ?? null);
  for (const map of [state.data, state.channels, state.topics, state.tags]) {
    for (const key in map) see((map[key] as Stamped<unknown>).t);
  }
  return newest === -Infinity ? null : { oldest, newest };
}

/** Whether the row is a profile: created, and created again since its last erasure. */
export function profileExists(state: ProfileState): boolean {
  return state.createdT !== null && state.lastCreatedT !== null;
}

/** The row's visible values, still stamped, or null when it is not a profile. */
export function visiblePart(state: ProfileState): ProfileState | null {
  if (!profileExists(state)) return null;
  const createdT = state.createdT as number;
  const since = (t: number) => t >= createdT;
  const register = <V>(entry: Stamped<V> | null) => (entry !== null && since(entry.t) ? entry : null);
  const visible = <V>(map: Record<string, Stamped<V>>) => kept(map, since);
  return {
    ...state,
    deletedT: null,
    email: register(state.email),
    phoneNumber: register(state.phoneNumber),
    data: visible(state.data),
    channels: visible(state.channels),
    topics: visible(state.topics),
    tags: visible(state.tags),
    unsubscribed: register(state.unsubscribed),
  };
}

export interface VisibleProfile {
  email: string | null;
  phoneNumber: string | null;
  data: Record<string, Json>;
  channels: ChannelValue[];
  /** Explicit topic choices by topic id. */
  topics: Record<string, TopicStatus>;
  /** Sorted. */
  tags: string[];
  unsubscribed: boolean;
}

const byKey = ([a]: readonly [string, unknown], [b]: readonly [string, unknown]) => (a < b ? -1 : a > b ? 1 : 0);
const values = <V>(map: Record<string, Stamped<V>>) =>
  Object.entries(map)
    .sort(byKey)
    .map(([key, entry]) => [key, entry.v] as const);

/**
 * The rows of one profile's ids (a reidentified user keeps a row per id it had) as one state,
 * merged field by field by their stamps. Each row's own erasures are already applied to it,
 * and reach no other row: an id erased before it was linked keeps the others' values.
 */
export function linkedState(rows: readonly ProfileState[]): ProfileState {
  // mergeStates of each row in turn, without their erasures, merged into one state in place:
  // mergeStates copies every map it merges, which made a profile of n ids cost O(n²).
  const merged = emptyState();
  for (const row of rows) {
    merged.createdT = earliest(merged.createdT, row.createdT);
    merged.lastCreatedT = latest(merged.lastCreatedT, row.lastCreatedT);
    merged.email = newest(merged.email, row.email);
    merged.phoneNumber = newest(merged.phoneNumber, row.phoneNumber);
    merged.unsubscribed = newest(merged.unsubscribed, row.unsubscribed);
    mergeStampedMapInto(merged.data, row.data);
    mergeStampedMapInto(merged.channels, row.channels);
    mergeStampedMapInto(merged.topics, row.topics);
    mergeStampedMapInto(merged.tags, row.tags);
  }
  return merged;
}

/**
 * What a reader sees of a profile kept in one or more rows, or null when it is not a profile:
 * none of its ids was created (again, after its erasure). An update that cannot create shows
 * from the earliest creation among its ids, whichever id it named.
 */
export function visibleProfile(...rows: ProfileState[]): VisibleProfile | null {
  const merged = visiblePart(linkedState(rows));
  if (merged === null) return null;
  return {
    email: merged.email?.v ?? null,
    phoneNumber: merged.phoneNumber?.v ?? null,
    data: Object.fromEntries(values(merged.data).filter(([, value]) => value !== null)),
    channels: values(merged.channels).map(([, channel]) => channel),
    topics: Object.fromEntries(values(merged.topics)),
    tags: values(merged.tags)
      .filter(([, on]) => on)
      .map(([tag]) => tag),
    unsubscribed: merged.unsubscribed?.v ?? false,
  };
}
