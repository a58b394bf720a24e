import { hash as digest } from "node:crypto";
import typia, { type tags } from "typia";
import { canonicalJson, jsonObjectFields, jsonValueProblems, valueFromJsonText, type Json } from "../kernel/json";
import { InvalidInput, type Parsed, type Problem } from "../kernel/problems";
import { queryReader, type QueryValues } from "../kernel/query-values";
import { MAX_FUTURE_SKEW_MS, parseTimestamp, TIMESTAMP_RULE } from "../kernel/time";
import { describeTypiaErrors } from "../kernel/validation-problems";
import { profileKeyForId, userIdOf, type IdentifyEvent, type UserEmail, type UserId } from "../profiles/identify";
import type { ProfileKeyOf } from "../profiles/profile-keys";

// Vero's event tracking (docs/events.md): the body as clients send it, checked here into the
// event the gateway queues, so that one request, a batch item and an import line are read by
// the same code and get the same problems.

/** Who did it: an id, or an email for a user known by email alone (vero gem 1.0 adds more fields, ignored). */
export interface EventIdentity {
  id?: UserId | null;
  email?: UserEmail | null;
}

export type EventName = string & tags.MinLength<1> & tags.MaxLength<255>;

export interface TrackBody {
  identity: EventIdentity;
  event_name: EventName;
  /** Free-form, as identify's `data`. */
  data?: Record<string, unknown> | null;
  extras?: {
    created_at?: string | number | null;
    source?: (string & tags.MaxLength<255>) | null;
    /** RudderStack sends its microsecond timestamp, a number. */
    check_id?: (string & tags.MaxLength<255>) | number | null;
    message_id?: (string & tags.MaxLength<255>) | null;
  } | null;
}

/** One accepted event, as queued for the workers (payload version 1 of the events job). */
export interface TrackedEvent {
  projectId: number;
  /** The profile the event belongs to (profileKeyForId of `userId`). */
  key: string;
  /** The user's id, or the email of a user known by email alone. */
  userId: string;
  /** The identity's email, kept on a profile the event creates. */
  email?: string;
  /** Given by the gateway: a job applied twice stores the event once. */
  eventId: string;
  name: string;
  /** Null when the request sent none. */
  data: Record<string, Json> | null;
  source?: string;
  /** When it happened (ms): extras.created_at, never later than receivedAt. */
  t: number;
  receivedAt: number;
  /** Events with the same key within `dedupWindowMs` of each other (as received) are one. */
  dedupKey?: string;
  dedupWindowMs?: number;
}

/** How long an Idempotency-Key or extras.message_id makes two events one. */
export const IDEMPOTENCY_WINDOW_MS = 7 * 24 * 3_600_000;

/** What the gateway knows besides the body. */
export interface TrackContext {
  projectId: number;
  receivedAt: number;
  eventId: string;
  /** The Idempotency-Key header, when sent. */
  idempotencyKey?: string;
  /** EVENT_DEDUP_WINDOW_S in ms; 0 turns Vero's content rule off. */
  dedupWindowMs: number;
}

/**
 * An event id that is the same whenever it is made of the same scope and name: an imported
 * record's (a resume sends the records of its last batch again) or a message's own id. The
 * events table keeps each (project, user, time, id) once. UUID-shaped, from a SHA-256 of both.
 */
export function namedEventId(scope: string, name: string): string {
  const hex = digest("sha256", `${scope}\0${name}`, "hex");
  const variant = ((parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The id of an event that carries one of its own (Segment's messageId, a file's event id): that
 * id when it is a UUID, else one made of it alone, so that the same user and time make it one
 * event however often and wherever it is sent.
 */
export function ownEventId(own: string): string {
  return UUID.test(own) ? own.toLowerCase() : namedEventId("message", own);
}

/** Case, spaces, underscores and dashes do not make two event names different. */
export function normalisedEventName(name: string): string {
  return name.toLowerCase().replace(/[\s_-]+/g, "");
}

/** n8n and Vero's old curl forms send objects as JSON text. */
const objectFromText = (value: unknown) => valueFromJsonText(value, "{");

/**
 * The identity as clients send it: JSON text (Vero's 2016 curl forms), an empty email beside an
 * id (getvero-go) as no email, and, without any identity, the top-level `id` and `email`
 * (vero-node's track sends `{id, event_name}`). A top-level `email` beside an identity (n8n) is
 * ignored.
 */
function identityOf(fields: Record<string, unknown>): unknown {
  const given = objectFromText(fields.identity);
  const identity =
    given ?? (fields.id !== undefined || fields.email !== undefined ? { id: fields.id, email: fields.email } : given);
  if (identity === null || typeof identity !== "object" || Array.isArray(identity)) return identity;
  if ((identity as Record<string, unknown>).email !== "") return identity;
  const { email: _empty, ...rest } = identity as Record<string, unknown>;
  return rest;
}

/** The body with its objects read from text; the body itself (no copy: every track pays for one) when none was text. */
function withObjectsFromText(body: unknown): unknown {
  const fields = jsonObjectFields(body);
  if (fields === null) return body;
  const identity = identityOf(fields);
  const data = objectFromText(fields.data);
  const extras = objectFromText(fields.extras);
  if (identity === fields.identity && data === fields.data && extras === fields.extras) return body;
  return { ...fields, identity, data, extras };
}

const validateTrackBody = typia.createValidate<TrackBody>();

const hash = (text: string) => digest("sha256", text, "base64url");

/**
 * Vero's rule: the same user, name (normalised) and `data` when sent, else `check_id`, else
 * nothing. An idempotency key, when given, replaces it: the client says which events are one.
 */
function dedupOf(
  event: TrackedEvent,
  body: TrackBody,
  context: TrackContext,
): { dedupKey: string; dedupWindowMs: number } | undefined {
  const messageId = body.extras?.message_id;
  // A message id that is a UUID names its event in any case (ownEventId), so it is one event in any case.
  const ownId = typeof messageId === "string" && UUID.test(messageId) ? messageId.toLowerCase() : messageId;
  const idempotency = context.idempotencyKey ?? ownId ?? undefined;
  if (idempotency !== undefined && idempotency !== null && idempotency !== "")
    return { dedupKey: hash(`idempotency\0${idempotency}`), dedupWindowMs: IDEMPOTENCY_WINDOW_MS };
  if (context.dedupWindowMs <= 0) return undefined;
  const checkId = body.extras?.check_id;
  const content =
    event.data !== null
      ? `data\0${canonicalJson(event.data)}`
      : checkId !== undefined && checkId !== null
        ? `check\0${String(checkId)}`
        : "";
  const key = hash(`vero\0${event.key}\0${normalisedEventName(event.name)}\0${content}`);
  return { dedupKey: key, dedupWindowMs: context.dedupWindowMs };
}

const inIdentity = (problem: Problem): Problem => ({
  path: `identity.${problem.path}`,
  message: `identity.${problem.message}`,
});

/** The event a track body names, or the problems that keep it from being one. */
export function parseTrack(input: unknown, context: TrackContext): Parsed<TrackedEvent> {
  if (context.idempotencyKey !== undefined && context.idempotencyKey.length > 255) {
    const message = "the Idempotency-Key header must be at most 255 characters";
    return { ok: false, problems: [{ path: "Idempotency-Key", message }] };
  }
  const body = withObjectsFromText(input);
  const result = validateTrackBody(body);
  if (!result.success) return { ok: false, problems: describeTypiaErrors(result.errors) };
  const problems = jsonValueProblems(body);
  if (problems.length > 0) return { ok: false, problems };
  const track = result.data;

  let t = context.receivedAt;
  const createdAt = track.extras?.created_at;
  if (createdAt !== undefined && createdAt !== null) {
    const parsed = parseTimestamp(createdAt);
    if (parsed === null) {
      const message = `extras.created_at must be ${TIMESTAMP_RULE}`;
      return { ok: false, problems: [{ path: "extras.created_at", message }] };
    }
    if (parsed > context.receivedAt + MAX_FUTURE_SKEW_MS) {
      const message = "extras.created_at must not be more than 5 minutes in the future";
      return { ok: false, problems: [{ path: "extras.created_at", message }] };
    }
    // As for identify: nothing is ordered after the moment it was acknowledged.
    t = Math.min(parsed, context.receivedAt);
  }
  let userId: string;
  try {
    userId = userIdOf(track.identity);
  } catch (error) {
    if (error instanceof InvalidInput) return { ok: false, problems: error.problems.map(inIdentity) };
    throw error;
  }
  const event: TrackedEvent = {
    projectId: context.projectId,
    key: profileKeyForId(userId),
    userId,
    eventId: context.eventId,
    name: track.event_name,
    data: (track.data ?? null) as Record<string, Json> | null,
    t,
    receivedAt: context.receivedAt,
  };
  if (track.identity.email !== undefined && track.identity.email !== null) event.email = track.identity.email;
  if (track.extras?.source !== undefined && track.extras.source !== null) event.source = track.extras.source;
  // Set on the event, not spread into a copy of it: a third of what the key costs each track.
  const dedup = dedupOf(event, track, context);
  if (dedup !== undefined) {
    event.dedupKey = dedup.dedupKey;
    event.dedupWindowMs = dedup.dedupWindowMs;
  }
  return { ok: true, value: event };
}

/**
 * A job's events with those that repeat another's deduplication key within its window (as
 * received) left out: `kept` holds the first of each run, `duplicates` the rest. The store
 * claims each key once per statement, and checks the kept ones against what is stored.
 */
export function collapseDuplicateEvents(events: readonly TrackedEvent[]): {
  kept: TrackedEvent[];
  duplicates: TrackedEvent[];
} {
  const lastKept = new Map<string, number>();
  const kept: TrackedEvent[] = [];
  const duplicates: TrackedEvent[] = [];
  const byReceipt = [...events].sort((a, b) => a.receivedAt - b.receivedAt);
  for (const event of byReceipt) {
    if (event.dedupKey === undefined) {
      kept.push(event);
      continue;
    }
    const key = `${event.projectId}\0${event.dedupKey}`;
    const last = lastKept.get(key);
    if (last !== undefined && event.receivedAt - last < (event.dedupWindowMs ?? 0)) {
      duplicates.push(event);
      continue;
    }
    lastKept.set(key, event.receivedAt);
    kept.push(event);
  }
  return { kept, duplicates };
}

/**
 * As in Vero, an event for a user who is no profile creates one, by the identify rules: an
 * identify stamped at the user's earliest event, with the identity's email when one was given.
 * Users who are profiles already are not written at all.
 */
export function profileCreations(
  events: readonly TrackedEvent[],
  notProfiles: readonly { projectId: number; key: string }[],
): IdentifyEvent[] {
  const wanted = new Set(notProfiles.map(({ projectId, key }) => `${projectId}\0${key}`));
  const creations = new Map<string, IdentifyEvent>();
  for (const event of events) {
    const user = `${event.projectId}\0${event.key}`;
    if (!wanted.has(user)) continue;
    const creation = creations.get(user) ?? {
      projectId: event.projectId,
      key: event.key,
      id: event.userId,
      t: event.t,
      updateOnly: false,
    };
    creation.t = Math.min(creation.t, event.t);
    if (creation.email === undefined && event.email !== undefined) creation.email = event.email;
    creations.set(user, creation);
  }
  return [...creations.values()];
}

/**
 * An event as a job holds it: naming its user by `userId`. Jobs of payload version 1 name the
 * profile by `key` too ("i:<userId>", which workers no longer store under); version 2 does not.
 */
export type UnkeyedEvent = Omit<TrackedEvent, "key">;

/** A queued event as the workers store it: `key` the stored key of its user. */
export function eventWithStoredKey(event: UnkeyedEvent, keyOf: ProfileKeyOf): TrackedEvent {
  return { ...event, key: keyOf(event.projectId, event.userId) };
}

export const EVENT_PAGE_DEFAULT = 25;
export const EVENT_PAGE_MAX = 100;

/** A page of a user's events, newest first: those after `after` (the previous page's last). */
export interface EventPageRequest {
  limit: number;
  after: { t: number; id: string } | null;
  /** normalisedEventName of the `event_name` asked for. */
  nameKey: string | null;
  /** Events that happened at or after `since` and before `until` (ms). */
  since: number | null;
  until: number | null;
}

/** The time is in ms since the epoch, before it (years before 1970) too. */
const EVENT_CURSOR_TEXT = /^event:(-?[0-9]{1,15}):([0-9a-f-]{36})$/;
/**
 * The oldest time Postgres holds (4714-11-24 BC): a cursor may name an event stored before the
 * API took years 0001 to 9999 only, but no time Postgres would refuse to compare.
 */
const OLDEST_STORED_TIME_MS = Date.parse("-004713-11-24T00:00:00Z");

/** Opaque to clients, so the keyset behind it can change without breaking them. */
export function eventCursor(t: number, id: string): string {
  return Buffer.from(`event:${t}:${id}`).toString("base64url");
}

function afterFromCursor(cursor: string): EventPageRequest["after"] {
  const match = EVENT_CURSOR_TEXT.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (match === null || eventCursor(Number(match[1]), match[2] as string) !== cursor) return null;
  const t = Number(match[1]);
  return t >= OLDEST_STORED_TIME_MS ? { t, id: match[2] as string } : null;
}

/** Reads `limit`, `cursor`, `event_name`, `since` and `until` from a query string. */
export function eventPageRequest(query: QueryValues): Parsed<EventPageRequest> {
  const problems: Problem[] = [];
  const { text, limit, time, cursor } = queryReader(query, problems);
  const page: EventPageRequest = {
    limit: limit(EVENT_PAGE_DEFAULT, EVENT_PAGE_MAX),
    after: cursor(afterFromCursor),
    nameKey: null,
    since: null,
    until: null,
  };
  const name = text("event_name");
  if (name !== null) {
    if (name.length >= 1 && name.length <= 255) page.nameKey = normalisedEventName(name);
    else problems.push({ path: "query.event_name", message: "event_name must be 1 to 255 characters" });
  }
  page.since = time("since");
  page.until = time("until");
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value: page };
}
