import type { ChannelValue, IdentifyEvent } from "./identify";
import type { Json } from "./json";
import { fieldMap, mergeStampedMaps, newest, stamp, type Stamped } from "./stamp";
import type { TopicStatus } from "./topic";

/**
 * Everything ever written to one profile, each field stamped with the update that wrote it.
 * Merging two states is commutative, associative and idempotent, so any order of updates and
 * any redelivery ends in the same state.
 *
 * `createdT` is the earliest time of an update that may create the profile (null: only
 * update_only updates seen so far). A field is visible when it was written at or after that
 * time: an update_only update applies exactly when the profile existed at its timestamp.
 */
export interface ProfileState {
  createdT: number | null;
  email: Stamped<string> | null;
  phoneNumber: Stamped<string> | null;
  data: Record<string, Stamped<Json>>;
  channels: Record<string, Stamped<ChannelValue>>;
  topics: Record<string, Stamped<TopicStatus>>;
}

export function channelKey(channel: { type: string; address: string }): string {
  return `${channel.type}:${channel.address}`;
}

export function stateFromEvent(event: IdentifyEvent): ProfileState {
  const { t } = event;
  const state: ProfileState = {
    createdT: event.updateOnly ? null : t,
    email: event.email === undefined ? null : stamp(t, event.email),
    phoneNumber: event.phoneNumber === undefined ? null : stamp(t, event.phoneNumber),
    data: fieldMap(),
    channels: fieldMap(),
    topics: fieldMap(),
  };
  for (const [key, value] of Object.entries(event.data ?? {})) state.data[key] = stamp(t, value);
  for (const channel of event.channels ?? []) {
    state.channels[channelKey(channel)] = stamp(t, channel);
  }
  for (const topic of event.topics ?? []) state.topics[String(topic.id)] = stamp(t, topic.status);
  return state;
}

function earliest(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.min(a, b);
}

export function mergeStates(a: ProfileState, b: ProfileState): ProfileState {
  return {
    createdT: earliest(a.createdT, b.createdT),
    email: newest(a.email, b.email),
    phoneNumber: newest(a.phoneNumber, b.phoneNumber),
    data: mergeStampedMaps(a.data, b.data),
    channels: mergeStampedMaps(a.channels, b.channels),
    topics: mergeStampedMaps(a.topics, b.topics),
  };
}

export interface VisibleProfile {
  email: string | null;
  phoneNumber: string | null;
  data: Record<string, Json>;
  channels: ChannelValue[];
  /** Explicit topic choices by topic id. */
  topics: Record<string, TopicStatus>;
}

/** What a reader sees, or null while the profile has not been created. */
export function visibleProfile(state: ProfileState): VisibleProfile | null {
  const createdT = state.createdT;
  if (createdT === null) return null;
  const visible = <V>(entry: Stamped<V>) => entry.t >= createdT;
  const values = <V>(map: Record<string, Stamped<V>>) =>
    Object.entries(map)
      .filter(([, entry]) => visible(entry))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, entry]) => [key, entry.v] as const);

  const register = (entry: Stamped<string> | null) => (entry !== null && visible(entry) ? entry.v : null);

  return {
    email: register(state.email),
    phoneNumber: register(state.phoneNumber),
    data: Object.fromEntries(values(state.data).filter(([, value]) => value !== null)),
    channels: values(state.channels).map(([, channel]) => channel),
    topics: Object.fromEntries(values(state.topics)),
  };
}
