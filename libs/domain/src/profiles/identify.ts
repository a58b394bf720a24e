import type { tags } from "typia";
import type { Json } from "../kernel/json";
import { InvalidInput } from "../kernel/problems";
import { MAX_FUTURE_SKEW_MS, parseTimestamp, TIMESTAMP_RULE } from "../kernel/time";
import type { TopicStatus } from "../topics/topic";

export interface IdentifyChannel {
  type: string & tags.Pattern<"^[A-Za-z0-9_.-]{1,64}$">;
  address: string & tags.MinLength<1> & tags.MaxLength<4096>;
  platform?: (string & tags.MaxLength<64>) | null;
}

/** A user's id as clients send it: text, or a number (kept as its decimal text). */
export type UserId = (string & tags.MinLength<1> & tags.MaxLength<255>) | (number & tags.Type<"int64">);
export type UserEmail = string & tags.Format<"email"> & tags.MaxLength<254>;

export interface IdentifyTopicChoice {
  id: (number & tags.Type<"uint32">) | (string & tags.Pattern<"^[0-9]{1,9}$">);
  status: TopicStatus;
  name?: string | null;
}

/**
 * The identify request body as integrations send it; unknown top-level fields are ignored.
 * Real clients send null for a field they have no value for (`id: null` for a user known by
 * email only, `data: null`, `email: null`): a null top-level field is a field not given. They
 * also send a single channel as an object rather than a list.
 */
export interface IdentifyBody {
  /** Not given: the user is keyed by `email`. */
  id?: UserId | null;
  email?: UserEmail | null;
  /** Vero's SMS field, stored as sent. */
  phone_number?: (string & tags.MinLength<1> & tags.MaxLength<64>) | null;
  channels?: (IdentifyChannel[] & tags.MaxItems<100>) | IdentifyChannel | null;
  /** Free-form: anything JSON can hold (typia cannot check a recursive JSON type with null). */
  data?: Record<string, unknown> | null;
  extras?: {
    created_at?: string | number;
    update_only?: "true" | "false" | boolean;
  } | null;
  preferences?: {
    topics?: IdentifyTopicChoice[] & tags.MaxItems<1000>;
  } | null;
}

export interface ChannelValue {
  type: string;
  address: string;
  platform: string | null;
}

/**
 * One accepted identify, as queued for the workers. `t` orders it against other updates of the
 * same profile; `id` is the user's id when given, otherwise its email (as Vero keys users), and
 * `key` names the profile by it: profileKeyForId as queued, its stored key (a keyed hash of the
 * id, withStoredKeys) once a worker reads it.
 */
export interface IdentifyEvent {
  /** Absent in jobs queued before the other profile operations existed. */
  op?: "identify";
  projectId: number;
  key: string;
  id: string;
  t: number;
  updateOnly: boolean;
  email?: string;
  phoneNumber?: string;
  data?: Record<string, Json>;
  channels?: ChannelValue[];
  topics?: { id: number; status: TopicStatus }[];
}

export function profileKeyForId(id: string): string {
  return `i:${id}`;
}

/**
 * The id of the profile an event names. Gateways before migration 007 queued users known by
 * email only as `e:<email>` with a null id; such jobs name the profile of that email now.
 */
export function profileIdOf(event: Pick<IdentifyEvent, "key">): string {
  return event.key.slice(2);
}

/** An id as text. `path` names the field it came in, for the problem. */
export function userIdText(id: UserId, path: string): string {
  // JSON numbers past 2^53 − 1 reach us already rounded (9007199254740993 parses as …992):
  // such an id would name another user, so it must come as text.
  if (typeof id === "number" && !Number.isSafeInteger(id)) {
    throw new InvalidInput([{ path, message: `${path} must be sent as a string when it is larger than 2^53 - 1` }]);
  }
  return String(id);
}

/** The user a request names: its `id`, else its `email`, which is the id of a user known by email alone. */
export function userIdOf(body: { id?: UserId | null; email?: UserEmail | null }): string {
  if (body.id !== undefined && body.id !== null) return userIdText(body.id, "id");
  if (body.email !== undefined && body.email !== null) return body.email;
  throw new InvalidInput([{ path: "id", message: "id or email is required" }]);
}

/**
 * Turns a validated body into the queued event, applying the rules typia cannot express;
 * throws InvalidInput for a body that breaks one.
 */
export function toIdentifyEvent(projectId: number, body: IdentifyBody, receivedAt: number): IdentifyEvent {
  const id = userIdOf(body);

  let t = receivedAt;
  if (body.extras?.created_at !== undefined) {
    const parsed = parseTimestamp(body.extras.created_at);
    if (parsed === null) {
      const message = `extras.created_at must be ${TIMESTAMP_RULE}`;
      throw new InvalidInput([{ path: "extras.created_at", message }]);
    }
    if (parsed > receivedAt + MAX_FUTURE_SKEW_MS) {
      const message = "extras.created_at must not be more than 5 minutes in the future";
      throw new InvalidInput([{ path: "extras.created_at", message }]);
    }
    // Ahead of the receive time counts as the receive time: no update is ordered after the moment
    // it was acknowledged, so a delete received later erases it (docs/profiles.md, "The stamp").
    t = Math.min(parsed, receivedAt);
  }
  const updateOnly = body.extras?.update_only === true || body.extras?.update_only === "true";

  const event: IdentifyEvent = {
    projectId,
    key: profileKeyForId(id),
    id,
    t,
    updateOnly,
  };
  if (body.email !== undefined && body.email !== null) event.email = body.email;
  if (body.phone_number !== undefined && body.phone_number !== null) event.phoneNumber = body.phone_number;
  if (body.data !== undefined && body.data !== null) event.data = body.data as Record<string, Json>;
  if (body.channels !== undefined && body.channels !== null) {
    const channels = Array.isArray(body.channels) ? body.channels : [body.channels];
    event.channels = channels.map((c) => ({ type: c.type, address: c.address, platform: c.platform ?? null }));
  }
  if (body.preferences?.topics !== undefined) {
    event.topics = body.preferences.topics.map((topic) => ({ id: Number(topic.id), status: topic.status }));
  }
  return event;
}
