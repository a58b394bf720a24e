import type { tags } from "typia";
import type { Permission } from "../access/permissions";
import type { ChangeType } from "../changes/change-feed";
import type { JourneyStatus } from "../journeys/journey";
import type { IntakeDoor, IntakeOutcome } from "../requests/intake-log";
import type { TopicStatus, TopicValues } from "../topics/topic";

// The resources of the API, in one place: what the gateway's use cases and ctl return, and
// what the OpenAPI document is generated from. Request bodies are not here: the document uses the very types the gateway
// validates with, plus the credential fields of requests/credential-bodies.ts.

type Integer = number & tags.Type<"int32">;
type DateTime = string & tags.Format<"date-time">;

/**
 * A resource serialized by Postgres (journeys are built as JSON by one statement), sent as is
 * without being parsed and serialized again. The type names what the text holds.
 */
export type JsonText<T> = string & { readonly __json?: T };

/** Identify answers, successful or not. */
export interface IdentifyReply {
  status: Integer;
  message: string;
}

/** A batch's answer: its operations' answers, in their order; a refused one's `message` says why. */
export interface BatchReply extends IdentifyReply {
  results: IdentifyReply[];
}

/** A message of a /v1 batch that was not queued: its place in the batch (from 0), its messageId when it has one, why. */
export interface SpecRefusal {
  index: Integer;
  messageId?: string;
  reason: string;
}

/**
 * The tracking spec's answer (docs/tracking-spec.md), Segment's `{success: true}` once every
 * accepted message is durably queued; `refused` lists the messages of a batch that were not.
 */
export interface SpecReply {
  success: true;
  refused?: SpecRefusal[];
}

/** Key-authenticated failures: unauthorized, forbidden, not_found, method_not_allowed, unavailable. */
export interface ErrorReply {
  error: string;
}

/** Validation failures (400, 409, 413, 422): one entry per problem. */
export interface ProblemsReply {
  errors: { message: string; path?: string }[];
}

/**
 * A topic's values as the Topic resource shows them, mapped from TopicValues so that a new value
 * is shown and documented with no edit here: each as stored, but a blank description is omitted.
 */
type ShownTopicValues = {
  [Field in keyof TopicValues]: Field extends "description"
    ? string & tags.JsonSchemaPlugin<{ description: "Omitted when blank." }>
    : TopicValues[Field];
};

// Partial first keeps the values in TopicValues' order; Omit makes all but the description required.
type TopicShape = { id: Integer } & Partial<ShownTopicValues> &
  Omit<ShownTopicValues, "description"> & { created_at: DateTime; updated_at: DateTime };
// An interface, so that TypeScript reads its members only when asked: as an alias, read sooner, it
// changed the order of the literal types typia writes unions in (TopicStatus' oneOf, everywhere).
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface Topic extends TopicShape {}

export interface TopicPage {
  data: Topic[];
  /** Pass as `cursor` for the next page; null on the last page. */
  next_cursor: string | null;
}

export interface ProfileChannel {
  type: string;
  address: string;
  platform: string | null;
}

export interface ProfileTopic {
  id: Integer;
  name: string;
  status: TopicStatus;
  /** "global" while the user is unsubscribed from everything: every topic then reads unsubscribed. */
  source: "explicit" | "default" | "global";
}

export interface Profile {
  /** The user's id; for a user identified by email only, that email. */
  id: string;
  email: string | null;
  /** Vero's SMS field. */
  phone_number: string | null;
  channels: ProfileChannel[];
  data: Record<string, unknown>;
  /** The tags that are on, sorted. */
  tags: string[];
  /** Unsubscribed from everything (Vero's unsubscribe, until a resubscribe). */
  unsubscribed: boolean;
  topics: ProfileTopic[];
  /** How many tracked events the user's ids have (docs/events.md). */
  event_count: number;
  /** When the user's latest event happened; null without events. */
  last_event_at: DateTime | null;
  created_at: DateTime;
  updated_at: DateTime;
}

/** What every read of a profile shows the same way, beside its id, topics and events (the profile read, ctl export). */
export type ProfileFields = Pick<
  Profile,
  "email" | "phone_number" | "channels" | "data" | "tags" | "unsubscribed" | "created_at" | "updated_at"
>;

export interface ProfilePage {
  /** In an order of the store's (stable, not by time); may hold fewer than `limit`, even none, when more may follow. */
  data: Profile[];
  /** Pass as `cursor` for the next page; null on the last page. */
  next_cursor: string | null;
}

/** One tracked event, as the event read shows it. */
export interface UserEvent {
  id: string;
  /** As sent. */
  event_name: string;
  /** Null when the event was sent without data. */
  data: Record<string, unknown> | null;
  source: string | null;
  /** When it happened: extras.created_at, or when it was received. */
  created_at: DateTime;
  received_at: DateTime;
}

export interface UserEventPage {
  /** Newest first. */
  data: UserEvent[];
  /** Pass as `cursor` for the next page; null on the last page. */
  next_cursor: string | null;
}

/** One change of the feed (docs/changes.md). */
export interface Change {
  /** Opaque: pass it as `after` to read the changes that follow this one. */
  position: string;
  type: ChangeType;
  /** The user's id as the change names it (a reidentify's: the new id; an erasure's: the erased id). */
  user_id: string | null;
  /** When the change was applied (its transaction's time). */
  applied_at: DateTime;
  /** What changed; its fields depend on `type` (docs/changes.md, "Types"). */
  change: Record<string, unknown>;
}

/** A page of the feed: changes in the order they were applied, and where to read on. */
export interface ChangePage {
  changes: Change[];
  /**
   * Pass as `after` to read on: past every change this read went through, which may be further
   * than the last of `changes` (a `types` filter, or nothing new). Never null.
   */
  next: string;
}

/** One request (or a batch's operation, a /v1 batch's message, an imported record) as the intake received it (docs/intake-log.md). */
export interface IntakeLogEntry {
  /** Opaque: pass it as `after` to read the entries that follow this one. */
  position: string;
  received_at: DateTime;
  /** Where it came in: users (Vero's users API but track), events (track), batch, v1 (the tracking spec), import (ctl import). */
  door: IntakeDoor;
  /** The operation: identify, edit, tags, …; a batch item's `type`; a /v1 message type; the door's name when unknown. */
  operation: string;
  outcome: IntakeOutcome;
  /** 200, or the status of the refusal (a batch's refused operation or message: 400). */
  status: Integer;
  /** Why it was refused, as the answer says (the field and the rule); null when accepted. */
  reason: string | null;
  /** The user the body names (its `id`, else its `email`; a track's identity; a /v1 message's userId, else anonymousId). */
  user_id: string | null;
  /** The body as received, as text: its first INTAKE_LOG_BODY_BYTES (2 KiB) bytes. */
  body: string;
  /** Whether `body` was cut. */
  body_truncated: boolean;
}

/** A page of the intake log: its entries oldest first, and where to read on. */
export interface IntakeLogPage {
  entries: IntakeLogEntry[];
  /**
   * Pass as `after` to read on: past every entry this read went through, which may be further
   * than the last of `entries` (a filter, or nothing new). Never null.
   */
  next: string;
}

/** An operation a worker refused because of its input, kept until an operator replays or discards it. */
export interface ExportedDeadLetter {
  queue: "identify" | "events";
  /** As it was queued. */
  operation: unknown;
  error: string;
  created_at: DateTime;
}

/** Everything stored about one user, for a data-subject access request (docs/api.md "Export a user"). */
export interface UserExport {
  /** The id the export was asked for. */
  id: string;
  exported_at: DateTime;
  /** As the profile read shows it; null when the user is no profile (not yet, or erased since). */
  profile: Profile | null;
  /** Every id of the user that is stored: those reidentifies linked, as far as a row still holds them. */
  ids: string[];
  dead_letters: ExportedDeadLetter[];
  /** Oldest first. */
  events: UserEvent[];
}

/** Message metadata only: content bodies are never returned. */
export interface Content {
  id: Integer;
  locale: string | null;
  is_default: boolean;
  subject: string;
  preheader_text: string;
}

export interface Message {
  id: Integer;
  /** Email only; null for SMS and push. */
  from: string | null;
  reply_to: string | null;
  contents: Content[];
}

export interface EnterOrExitNode {
  id: Integer;
  type: "enter" | "exit";
}

export interface DelayNode {
  id: Integer;
  type: "delay";
  delay: {
    duration: number;
    duration_unit: string;
    delivery_option: number;
    delay_property: string | null;
    property_type: string | null;
    preferred_delivery_time: string | null;
  };
}

export interface MessageNode {
  id: Integer;
  type: "email" | "sms" | "push";
  title: string;
  message: Message;
}

export interface BranchNode {
  id: Integer;
  type: "branch";
  conditions: { combinator: string; groups: unknown[] };
}

export type JourneyNode = EnterOrExitNode | DelayNode | MessageNode | BranchNode;

export interface JourneyEdge {
  from: Integer;
  to: Integer;
  /** Only on edges leaving a branch node. */
  branch_index?: Integer;
}

export interface Journey {
  id: Integer;
  name: string;
  description: string | null;
  status: JourneyStatus;
  trigger: { type: string; event_name?: string | null };
  nodes: JourneyNode[];
  edges: JourneyEdge[];
  created_at: DateTime;
  updated_at: DateTime;
}

/** A journey in the journey list: the journey without its graph (GET /journeys/{id} has it). */
export type JourneyListItem = Omit<Journey, "nodes" | "edges">;

export interface JourneyPage {
  data: JourneyListItem[];
  /** Pass as `cursor` for the next page; null on the last page. */
  next_cursor: string | null;
}

/** An API key of the project as the key list shows it: never its secret, which is not stored. */
export interface ApiKey {
  /** The middle part of the key (`cmk_<id>_<secret>`); a string, as it may exceed JSON's safe integers. */
  id: string;
  permissions: Permission[];
  created_at: DateTime;
  /** When a rotation's grace period ends it (ctl key rotate); null when none does. */
  expires_at: DateTime | null;
  revoked_at: DateTime | null;
  /** Neither revoked nor expired: the key is accepted (on every gateway within 30 s of a change). */
  working: boolean;
}

export interface ApiKeyList {
  /** Oldest first, revoked and expired keys included. */
  data: ApiKey[];
}

/** A new API key: its resource and the key itself, shown this once. */
export interface NewApiKey extends ApiKey {
  /** The key to send as `Authorization: Bearer <api_key>`. Only a hash of its secret is stored: keep it now. */
  api_key: string;
}

/** What the last failed try of a webhook endpoint's current batch said, and since when that batch fails. */
export interface WebhookFailure {
  at: DateTime;
  /** Its error, in words (`answered 500`, a timeout, a refused address). */
  error: string;
  /** The first failed try of the batch; null once a replay has put the endpoint back to work. */
  failing_since: DateTime | null;
  /** Failed tries of the batch since then (0 after a replay). */
  failed_tries: Integer;
}

/** A webhook endpoint of the project as the webhook list shows it (docs/webhooks.md): never its signing secrets. */
export interface Webhook {
  id: string;
  /** Where the changes are posted: its origin, what follows shown as `/***`. */
  url: string;
  /** The change types delivered; null: every type. */
  types: ChangeType[] | null;
  /** `parked`: its batch failed for WEBHOOK_PARK_AFTER_S; nothing is tried until a replay. `revoked`: for good. */
  state: "active" | "parked" | "revoked";
  /** Since when it is in its state; null for an endpoint active since its creation. */
  state_changed_at: DateTime | null;
  /** How far it trails the feed: the age in seconds of the first change after its cursor, 0 when none; null when revoked. */
  lag_seconds: number | null;
  /** Null when its last try was delivered (or none failed). */
  last_failure: WebhookFailure | null;
  last_delivered_at: DateTime | null;
  /** When its next try may start (a failing endpoint's backoff, a slow one's pace). */
  next_try_at: DateTime;
  /** Until when the secret a rotation replaced still signs beside the new one; null when none does. */
  previous_secret_signs_until: DateTime | null;
  created_at: DateTime;
}

export interface WebhookList {
  /** Oldest first, revoked endpoints included. */
  data: Webhook[];
}
