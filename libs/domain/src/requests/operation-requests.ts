import typia, { type IValidation } from "typia";
import { parseTrack, type TrackBody, type TrackContext, type TrackedEvent } from "../events/events";
import { jsonObjectFields, jsonValueProblems, valueFromJsonText } from "../kernel/json";
import { InvalidInput, type Parsed } from "../kernel/problems";
import { describeTypiaErrors } from "../kernel/validation-problems";
import { toIdentifyEvent, type IdentifyBody, type IdentifyEvent } from "../profiles/identify";
import type {
  DeleteOperation,
  EditOperation,
  ProfileOperation,
  ReidentifyOperation,
  SubscriptionOperation,
  TagsOperation,
} from "../profiles/profile-operations";
import {
  toDeleteOperation,
  toEditOperation,
  toReidentifyOperation,
  toSubscriptionOperation,
  toTagsOperation,
  type EditTagsBody,
  type EditUserBody,
  type ReidentifyBody,
  type UserRefBody,
} from "../profiles/profile-requests";

// The body of each operation of Vero's users API read into what the gateway queues, or the
// problems that keep it from being one, in words: one request, a batch item and (later) an
// import line are read by the same code and refused with the same reasons.

/** What the gateway knows of a request besides its body. The event fields serve a track only. */
export type OperationContext = TrackContext;
type ProfileContext = Pick<OperationContext, "projectId" | "receivedAt">;

const validateIdentifyBody = typia.createValidate<IdentifyBody>();
const validateEditUserBody = typia.createValidate<EditUserBody>();
const validateEditTagsBody = typia.createValidate<EditTagsBody>();
const validateUserRefBody = typia.createValidate<UserRefBody>();
const validateReidentifyBody = typia.createValidate<ReidentifyBody>();

/** A body as its type, or what is wrong with it, field by field. */
function validated<T>(body: unknown, validate: (input: unknown) => IValidation<T>): Parsed<T> {
  const result = validate(body);
  if (!result.success) return { ok: false, problems: describeTypiaErrors(result.errors) };
  const problems = jsonValueProblems(body);
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value: result.data };
}

/** The rules typia cannot express are checked by conversions that throw InvalidInput: their problems too. */
function converted<Body, T>(body: Parsed<Body>, convert: (valid: Body) => T): Parsed<T> {
  if (!body.ok) return body;
  try {
    return { ok: true, value: convert(body.value) };
  } catch (error) {
    if (error instanceof InvalidInput) return { ok: false, problems: error.problems };
    throw error;
  }
}

/**
 * `data` (or `changes`) as JSON object text: form clients that cannot nest send it so
 * (`data={"age":20}`), and so does a Java client inside a JSON body.
 */
function withObjectFromText(body: unknown, name: "data" | "changes"): unknown {
  const fields = jsonObjectFields(body);
  return typeof fields?.[name] === "string" ? { ...fields, [name]: valueFromJsonText(fields[name], "{") } : body;
}

/** PHP encodes an empty associative array as `[]`: vero-php's update() without changes sends `changes: []`. */
function withChangesFromPhp(body: unknown): unknown {
  const fields = jsonObjectFields(body);
  return Array.isArray(fields?.changes) && fields.changes.length === 0 ? { ...fields, changes: {} } : body;
}

/**
 * A list sent as JSON text, as n8n sends tags (`"add": "[\"vip\"]"`) and form clients do; other
 * text is one tag (`"add": "vip"`).
 */
const listFromText = (value: unknown) =>
  typeof value === "string" && !value.trimStart().startsWith("[") ? [value] : valueFromJsonText(value, "[");

function withTagListsFromText(body: unknown): unknown {
  const fields = jsonObjectFields(body);
  return fields === null ? body : { ...fields, add: listFromText(fields.add), remove: listFromText(fields.remove) };
}

/** POST /users/track. */
export const parseIdentifyRequest = (body: unknown, { projectId, receivedAt }: ProfileContext): Parsed<IdentifyEvent> =>
  converted(validated(withObjectFromText(body, "data"), validateIdentifyBody), (valid) =>
    toIdentifyEvent(projectId, valid, receivedAt),
  );

/** PUT /users/edit. */
export const parseEditRequest = (body: unknown, { projectId, receivedAt }: ProfileContext): Parsed<EditOperation> =>
  converted(validated(withChangesFromPhp(withObjectFromText(body, "changes")), validateEditUserBody), (valid) =>
    toEditOperation(projectId, valid, receivedAt),
  );

/** PUT /users/tags/edit. */
export const parseTagsRequest = (body: unknown, { projectId, receivedAt }: ProfileContext): Parsed<TagsOperation> =>
  converted(validated(withTagListsFromText(body), validateEditTagsBody), (valid) =>
    toTagsOperation(projectId, valid, receivedAt),
  );

/** POST /users/unsubscribe (`unsubscribed` true) and /users/resubscribe (false). */
const parseSubscriptionRequest =
  (unsubscribed: boolean) =>
  (body: unknown, { projectId, receivedAt }: ProfileContext): Parsed<SubscriptionOperation> =>
    converted(validated(body, validateUserRefBody), (valid) =>
      toSubscriptionOperation(projectId, valid, receivedAt, unsubscribed),
    );
export const parseUnsubscribeRequest = parseSubscriptionRequest(true);
export const parseResubscribeRequest = parseSubscriptionRequest(false);

/** PUT /users/reidentify: null for a reidentify onto the same id, which changes nothing. */
export const parseReidentifyRequest = (
  body: unknown,
  { projectId, receivedAt }: ProfileContext,
): Parsed<ReidentifyOperation | null> =>
  converted(validated(body, validateReidentifyBody), (valid) => toReidentifyOperation(projectId, valid, receivedAt));

/** POST /users/delete. */
export const parseDeleteRequest = (body: unknown, { projectId, receivedAt }: ProfileContext): Parsed<DeleteOperation> =>
  converted(validated(body, validateUserRefBody), (valid) => toDeleteOperation(projectId, valid, receivedAt));

/** What one accepted operation queues, each kind in the micro-batches of its own job kind. */
export type QueuedOperation =
  | { queue: "profile-operations"; operation: ProfileOperation }
  | { queue: "events"; event: TrackedEvent }
  /** A reidentify onto the same id: accepted, and nothing to apply. */
  | { queue: "none" };

// Each operation as a batch item, the body of its single call with the `type` naming it: these
// types are the operation types (OperationType), and each has its reader in OPERATION_PARSERS.
export interface IdentifyInBatch extends IdentifyBody {
  type: "identify";
}
export interface TrackInBatch extends TrackBody {
  type: "track";
}
export interface EditInBatch extends EditUserBody {
  type: "edit";
}
export interface TagsInBatch extends EditTagsBody {
  type: "tags";
}
export interface UserRefInBatch extends UserRefBody {
  type: "delete" | "unsubscribe" | "resubscribe";
}
export interface ReidentifyInBatch extends ReidentifyBody {
  type: "reidentify";
}
/** One operation of a batch: `type` names it, the other fields are the body of its single call. */
export type BatchOperation =
  IdentifyInBatch | TrackInBatch | EditInBatch | TagsInBatch | UserRefInBatch | ReidentifyInBatch;

/** An operation of Vero's users API (and its event tracking), by the name a batch item gives it. */
export type OperationType = BatchOperation["type"];

const profileOperation =
  (parse: (body: unknown, context: ProfileContext) => Parsed<ProfileOperation | null>) =>
  (body: unknown, context: OperationContext): Parsed<QueuedOperation> => {
    const parsed = parse(body, context);
    if (!parsed.ok) return parsed;
    return {
      ok: true,
      value: parsed.value === null ? { queue: "none" } : { queue: "profile-operations", operation: parsed.value },
    };
  };

function trackedEvent(body: unknown, context: OperationContext): Parsed<QueuedOperation> {
  const parsed = parseTrack(body, context);
  return parsed.ok ? { ok: true, value: { queue: "events", event: parsed.value } } : parsed;
}

const OPERATION_PARSERS: Record<OperationType, (body: unknown, context: OperationContext) => Parsed<QueuedOperation>> =
  {
    identify: profileOperation(parseIdentifyRequest),
    track: trackedEvent,
    edit: profileOperation(parseEditRequest),
    tags: profileOperation(parseTagsRequest),
    unsubscribe: profileOperation(parseUnsubscribeRequest),
    resubscribe: profileOperation(parseResubscribeRequest),
    reidentify: profileOperation(parseReidentifyRequest),
    delete: profileOperation(parseDeleteRequest),
  };

/** Every operation type, in the order a refused batch item lists them. */
export const OPERATION_TYPES = Object.keys(OPERATION_PARSERS) as OperationType[];

/** The one entry point for every operation: the body (or batch item) of `type`, read into what it queues. */
export function parseOperation(
  type: OperationType,
  fields: unknown,
  context: OperationContext,
): Parsed<QueuedOperation> {
  return OPERATION_PARSERS[type](fields, context);
}
