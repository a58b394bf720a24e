import { ownEventId } from "../events/events";
import { jsonObjectFields } from "../kernel/json";
import type { Parsed, Problem } from "../kernel/problems";
import { EARLIEST_TIME_MS, MAX_FUTURE_SKEW_MS, parseTimestamp, TIMESTAMP_RULE } from "../kernel/time";
import { isOversizedOperation } from "./batch";
import { parseOperation, type OperationType, type QueuedOperation } from "./operation-requests";

// The tracking spec of Segment and RudderStack: the messages their SDKs send to `/v1/...` and
// their archives hold, each read into the operations of Vero's users API that the two platforms'
// Vero destinations send for it (docs/tracking-spec.md has the table and its sources), so that a
// user's data reads the same whichever door it came through. The gateway's /v1 routes and
// `ctl import --format segment` read messages with this one function.

/** The message types of the spec, each by the name its `type` field gives it. */
export const SPEC_MESSAGE_TYPES = ["identify", "track", "page", "screen", "group", "alias"] as const;
export type SpecMessageType = (typeof SPEC_MESSAGE_TYPES)[number];

/** The most messages one /v1/batch body may hold: far more than an SDK's 500 KB batch can (docs/tracking-spec.md). */
export const MAX_SPEC_BATCH_MESSAGES = 10_000;

/**
 * Where a message comes from, which decides how its times are read (docs/tracking-spec.md,
 * "Times"). `live`: an SDK's request. An event happened at its `timestamp` (RudderStack's
 * `originalTimestamp`), the client's clock, corrected as Segment does by the client's `sentAt`
 * (the message's, else the batch's): receivedAt − (sentAt − timestamp). A profile operation is
 * stamped when it was received, as Vero stamps the calls of its destinations. `archive`: a file
 * of messages Segment or RudderStack received (ctl import): their `timestamp` was corrected
 * then, and stamps their profile operations too, which never overwrite newer live data; their
 * events were received when they happened.
 */
export type SpecMessageSource =
  /** `batchSentAt`: the batch's `sentAt` (ms), read once for its messages (specBatchMessages). */
  | { kind: "live"; batchSentAt?: number }
  /** The times of messages that carry none: an import's own (docs/bulk.md, "Stamps: what wins"). */
  | { kind: "archive"; untimedProfileAt: number; untimedEventAt: number };

/** What the reader knows besides the message. */
export interface SpecMessageContext {
  projectId: number;
  /** When the message was received (ms): no operation is stamped later, and a time more than 5 minutes past it is refused. */
  receivedAt: number;
  source: SpecMessageSource;
  /** Vero's content rule for events without a messageId (EVENT_DEDUP_WINDOW_S in ms; 0, off, for imports). */
  dedupWindowMs: number;
  /** An id for an event whose message carries no messageId. */
  newEventId(): string;
}

class Refused {
  constructor(readonly problems: Problem[]) {}
}

const refuse = (path: string, message: string): never => {
  throw new Refused([{ path, message }]);
};

/** A field given: neither absent, null nor empty text (analytics.js sends `userId: null` for an anonymous user). */
const given = (value: unknown): boolean => value !== undefined && value !== null && value !== "";

function objectField(fields: Record<string, unknown>, name: string): Record<string, unknown> {
  const value = fields[name];
  if (!given(value)) return {};
  return jsonObjectFields(value) ?? refuse(name, `${name} must be a JSON object`);
}

/** A time as the users API reads one, or null. */
const timeOf = (value: unknown) =>
  typeof value === "string" || typeof value === "number" ? parseTimestamp(value) : null;

const timeRule = (name: string) => `${name} must be ${TIMESTAMP_RULE}`;

/** A time field of the message, or its problem. */
const readTime = (value: unknown, name: string): number => timeOf(value) ?? refuse(name, timeRule(name));

/** The first of `names` the message gives, with its name. */
function firstGiven(fields: Record<string, unknown>, names: string[]): [string, unknown] | null {
  const name = names.find((candidate) => given(fields[candidate]));
  return name === undefined ? null : [name, fields[name]];
}

/**
 * When the message happened (ms), or `untimed` when it gives no time: never after it was
 * received, and refused when more than 5 minutes past it.
 */
function messageTime(fields: Record<string, unknown>, context: SpecMessageContext, untimed: number): number {
  const { source, receivedAt } = context;
  const time = firstGiven(
    fields,
    source.kind === "live" ? ["timestamp", "originalTimestamp"] : ["timestamp", "sentAt", "receivedAt"],
  );
  if (time === null) return untimed;
  const [name, value] = time;
  let t = readTime(value, name);
  const sentAt =
    source.kind === "live"
      ? given(fields.sentAt)
        ? readTime(fields.sentAt, "sentAt")
        : source.batchSentAt
      : undefined;
  if (sentAt !== undefined) {
    t = receivedAt - (sentAt - t);
    if (t < EARLIEST_TIME_MS) refuse(name, `${name} corrected by sentAt falls before the year 0001`);
  }
  if (t > receivedAt + MAX_FUTURE_SKEW_MS) refuse(name, `${name} must not be more than 5 minutes in the future`);
  return Math.min(t, receivedAt);
}

/** When an event of the message happened. */
const eventTime = (fields: Record<string, unknown>, context: SpecMessageContext) =>
  messageTime(fields, context, context.source.kind === "live" ? context.receivedAt : context.source.untimedEventAt);

/**
 * The stamp of a profile operation of the message: when it was received (its place in a batch is
 * kept: inBatchOrder), or an archive's time. A client's clock, however corrected, is off by the
 * network's delay: a group call could be stamped before the identify that created its user when
 * the two come in different requests, and an edit stamped before a profile's creation is kept
 * aside (docs/profiles.md, "The rules").
 */
const profileStamp = (fields: Record<string, unknown>, context: SpecMessageContext) =>
  context.source.kind === "live" ? context.receivedAt : messageTime(fields, context, context.source.untimedProfileAt);

/**
 * Problems of our operation in the message's words: the field the message gave, not the body
 * field we made of it (`traits.email must be an email address`, not `email must be …`).
 */
function inMessageTerms(problems: Problem[], names: Readonly<Record<string, string>>): Problem[] {
  return problems.map((problem) => {
    const ours = Object.keys(names).find(
      (name) =>
        problem.path === name || (problem.path.startsWith(name) && /^[.[]/.test(problem.path.slice(name.length))),
    );
    if (ours === undefined) return problem;
    const theirs = names[ours] as string;
    const path = theirs + problem.path.slice(ours.length);
    const message = problem.message.startsWith(problem.path)
      ? path + problem.message.slice(problem.path.length)
      : problem.message;
    return { path, message };
  });
}

/** The user a message names: `userId`, else `anonymousId`. */
function userOf(fields: Record<string, unknown>): { id: unknown; from: string } {
  const user = firstGiven(fields, ["userId", "anonymousId"]);
  return user === null ? refuse("userId", "userId or anonymousId is required") : { id: user[1], from: user[0] };
}

/** Reads one operation of the message, received at `receivedAt`, its problems named in the message's fields. */
function operation(
  type: OperationType,
  body: object,
  { projectId, dedupWindowMs }: SpecMessageContext,
  { receivedAt, eventId }: { receivedAt: number; eventId: string },
  names: Readonly<Record<string, string>>,
): QueuedOperation {
  // Written out, not spread from the context (which holds a function): the spread took as long as
  // the rest of the message's reading (bench/README.md, "Tracking spec").
  const parsed = parseOperation(type, body, { projectId, receivedAt, eventId, dedupWindowMs });
  if (!parsed.ok) throw new Refused(inMessageTerms(parsed.problems, names));
  return parsed.value;
}

/** A profile operation stamped `t`. */
function profileOperation(
  type: OperationType,
  body: object,
  t: number,
  context: SpecMessageContext,
  names: Readonly<Record<string, string>>,
): QueuedOperation {
  return operation(type, body, context, { receivedAt: t, eventId: "" }, names);
}

/**
 * The tags edit a message asks the Vero destinations for: RudderStack's `integrations.vero.tags`
 * (`{add, remove}`) or Segment's `integrations.Vero.tags` (`{action: "add" | "remove", tags}`).
 */
function tagsOf(fields: Record<string, unknown>): { add?: unknown; remove?: unknown } | null {
  const integrations = jsonObjectFields(fields.integrations);
  const tags = jsonObjectFields(jsonObjectFields(integrations?.Vero ?? integrations?.vero)?.tags);
  if (tags === null) return null;
  if (tags.action === "add" || tags.action === "remove") return { [tags.action]: tags.tags };
  const listed = (list: unknown) => Array.isArray(list) && list.length > 0;
  return listed(tags.add) || listed(tags.remove) ? { add: tags.add, remove: tags.remove } : null;
}

function withTags(
  operations: QueuedOperation[],
  fields: Record<string, unknown>,
  id: unknown,
  t: number,
  context: SpecMessageContext,
): QueuedOperation[] {
  const tags = tagsOf(fields);
  if (tags === null) return operations;
  const names = { id: "userId", add: "integrations.Vero.tags", remove: "integrations.Vero.tags" };
  return [...operations, profileOperation("tags", { id, ...tags }, t, context, names)];
}

/**
 * identify → an identify: the email from `traits.email`, the phone from `traits.phone` (when it
 * is text), the other traits as data, `context.locale`, `timezone` and `userAgent` as the data
 * keys api.md reserves (`language`, `timezone`, `userAgent`), a device token as a push channel.
 */
function identifyOperations(fields: Record<string, unknown>, context: SpecMessageContext): QueuedOperation[] {
  const user = userOf(fields);
  const t = profileStamp(fields, context);
  const messageContext = objectField(fields, "context");
  const traitsField = given(fields.traits) ? "traits" : "context.traits";
  const traits = given(fields.traits) ? objectField(fields, "traits") : objectField(messageContext, "traits");
  const { email, phone, ...data } = traits;
  const phoneNumber = typeof phone === "string" && phone.length >= 1 && phone.length <= 64 ? phone : undefined;
  if (phone !== undefined && phoneNumber === undefined) data.phone = phone;
  const reserved = {
    language: messageContext.locale,
    timezone: messageContext.timezone,
    userAgent: messageContext.userAgent,
  };
  for (const [key, value] of Object.entries(reserved)) if (given(value)) data[key] = value;
  const device = jsonObjectFields(messageContext.device);
  const token = device?.token;
  const platform = jsonObjectFields(messageContext.os)?.name;
  const channels =
    typeof token === "string" && token !== ""
      ? [{ type: "push", address: token, ...(typeof platform === "string" ? { platform } : {}) }]
      : undefined;
  const body = { id: user.id, email: given(email) ? email : undefined, phone_number: phoneNumber, data, channels };
  const names = {
    id: user.from,
    email: `${traitsField}.email`,
    phone_number: `${traitsField}.phone`,
    data: traitsField,
    channels: "context.device",
  };
  return withTags([profileOperation("identify", body, t, context, names)], fields, user.id, t, context);
}

/** A messageId the API can keep as extras.message_id, and the event id it names (docs/bulk.md, "Stored once"). */
function eventIdentity(fields: Record<string, unknown>, context: SpecMessageContext) {
  const { messageId } = fields;
  if (!given(messageId)) return { eventId: context.newEventId(), extras: {} };
  if (typeof messageId !== "string") return refuse("messageId", "messageId must be text");
  return { eventId: ownEventId(messageId), extras: { message_id: messageId } };
}

/** An event named `name` with `properties` as its data, at the message's time, once per messageId. */
function eventOperation(
  fields: Record<string, unknown>,
  name: unknown,
  nameField: string,
  context: SpecMessageContext,
): QueuedOperation {
  const user = userOf(fields);
  const t = eventTime(fields, context);
  const { eventId, extras } = eventIdentity(fields, context);
  const body = {
    identity: { id: user.id },
    event_name: name,
    data: given(fields.properties) ? fields.properties : undefined,
    extras,
  };
  // A live event is received now; an archived one when it happened, so that it is one event with
  // the same messageId sent live then (its key is kept 7 days from its receipt).
  const receivedAt = context.source.kind === "live" ? context.receivedAt : t;
  const names = {
    "identity.id": user.from,
    event_name: nameField,
    data: "properties",
    "extras.message_id": "messageId",
  };
  const queued = operation("track", body, context, { receivedAt, eventId }, names);
  // The event happened at the message's time, read above: set on the event, rather than written
  // as extras.created_at for the track's reader to parse again.
  if (queued.queue === "events") queued.event.t = t;
  return queued;
}

/**
 * track → an event named `event` with `properties` as data; an event named `unsubscribe` or
 * `resubscribe` (any case) is the opt-out or back in, as RudderStack's destination sends it.
 */
function trackOperations(fields: Record<string, unknown>, context: SpecMessageContext): QueuedOperation[] {
  const subscription = typeof fields.event === "string" ? fields.event.toLowerCase() : "";
  const user = userOf(fields);
  const t = profileStamp(fields, context);
  if (subscription === "unsubscribe" || subscription === "resubscribe") {
    return [profileOperation(subscription, { id: user.id }, t, context, { id: user.from })];
  }
  return withTags([eventOperation(fields, fields.event, "event", context)], fields, user.id, t, context);
}

/**
 * page and screen → an event named as RudderStack's destination names it: "Viewed", the
 * category, the name, then "Page" or "Screen" ("Viewed Docs Home Page"; Segment's "viewed_page"
 * is the same name read by the API's event name rules).
 */
function viewOperations(fields: Record<string, unknown>, context: SpecMessageContext, kind: "Page" | "Screen") {
  const category = jsonObjectFields(fields.properties)?.category ?? fields.category;
  const words = [category, fields.name].filter((word) => typeof word === "string" && word !== "");
  return [eventOperation(fields, ["Viewed", ...words, kind].join(" "), "name", context)];
}

/**
 * group → an edit of the user's data key `group`: the group's traits but its email, as Segment's
 * destination sends it, with the `groupId` as its `id` (which Segment's leaves out).
 */
function groupOperations(fields: Record<string, unknown>, context: SpecMessageContext): QueuedOperation[] {
  const user = userOf(fields);
  const t = profileStamp(fields, context);
  const { email: _email, ...traits } = objectField(fields, "traits");
  const group = given(fields.groupId) ? { ...traits, id: fields.groupId } : traits;
  return [
    profileOperation("edit", { id: user.id, changes: { group } }, t, context, { id: user.from, changes: "traits" }),
  ];
}

/** alias → a reidentify of `previousId` as `userId`. */
function aliasOperations(fields: Record<string, unknown>, context: SpecMessageContext): QueuedOperation[] {
  if (!given(fields.previousId)) refuse("previousId", "previousId is required");
  if (!given(fields.userId)) refuse("userId", "userId is required");
  const t = profileStamp(fields, context);
  const body = { id: fields.previousId, new_id: fields.userId };
  return [profileOperation("reidentify", body, t, context, { id: "previousId", new_id: "userId" })];
}

const OVERSIZED = "message is larger than 256 KiB, the most a single call's body may hold";

/**
 * One message of the spec read into what it queues (none for an alias onto the same id), or the
 * problems that refuse it whole. `type` names it when the message gives none (a single call's path).
 */
export function parseSpecMessage(
  message: unknown,
  context: SpecMessageContext,
  type?: SpecMessageType,
): Parsed<QueuedOperation[]> {
  const fields = jsonObjectFields(message);
  if (fields === null) return { ok: false, problems: [{ path: "", message: "a message must be a JSON object" }] };
  const named = type ?? (typeof fields.type === "string" ? fields.type.toLowerCase() : fields.type);
  try {
    if (isOversizedOperation(fields)) refuse("", OVERSIZED);
    const operations = (() => {
      switch (named) {
        case "identify":
          return identifyOperations(fields, context);
        case "track":
          return trackOperations(fields, context);
        case "page":
          return viewOperations(fields, context, "Page");
        case "screen":
          return viewOperations(fields, context, "Screen");
        case "group":
          return groupOperations(fields, context);
        case "alias":
          return aliasOperations(fields, context);
        default: {
          const types = SPEC_MESSAGE_TYPES.map((known) => JSON.stringify(known)).join(", ");
          return refuse("type", `type must be one of ${types}; it is ${JSON.stringify(named ?? null)}`);
        }
      }
    })();
    return { ok: true, value: operations.filter((queued) => queued.queue !== "none") };
  } catch (error) {
    if (error instanceof Refused) return { ok: false, problems: error.problems };
    throw error;
  }
}

/** A /v1 batch: its messages, each with the batch's `context` and `integrations` under its own, and its `sentAt` (ms). */
export interface SpecBatch {
  messages: unknown[];
  sentAt?: number;
}

/**
 * The messages of a batch body (`{batch: [...], sentAt, context, integrations}`), or why it is
 * no batch. The batch's `context` and `integrations` apply to each message, whose own win; its
 * `sentAt` is read once, for every message that gives none.
 */
export function specBatchMessages(body: unknown): Parsed<SpecBatch> {
  const fields = jsonObjectFields(body);
  const batch = fields?.batch;
  if (fields === null || !Array.isArray(batch)) {
    return {
      ok: false,
      problems: [{ path: "batch", message: "body must be a JSON object with a batch list of messages" }],
    };
  }
  if (batch.length > MAX_SPEC_BATCH_MESSAGES) {
    const message = `batch must hold at most ${MAX_SPEC_BATCH_MESSAGES} messages; it holds ${batch.length}`;
    return { ok: false, problems: [{ path: "batch", message }] };
  }
  const sentAt = given(fields.sentAt) ? timeOf(fields.sentAt) : undefined;
  if (sentAt === null) return { ok: false, problems: [{ path: "sentAt", message: timeRule("sentAt") }] };
  const shared = { context: jsonObjectFields(fields.context), integrations: jsonObjectFields(fields.integrations) };
  const messages =
    shared.context === null && shared.integrations === null
      ? batch
      : batch.map((message) => {
          const own = jsonObjectFields(message);
          if (own === null) return message;
          const merged = { ...own };
          for (const [name, value] of Object.entries(shared)) {
            if (value !== null) merged[name] = { ...value, ...jsonObjectFields(own[name]) };
          }
          return merged;
        });
  return { ok: true, value: { messages, ...(sentAt === undefined ? {} : { sentAt }) } };
}
