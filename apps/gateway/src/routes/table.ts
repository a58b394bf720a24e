import type {
  ApiKeyList,
  BatchBody,
  BatchReply,
  ChangePage,
  EditTagsBody,
  EditUserBody,
  ErrorReply,
  IdentifyBody,
  IdentifyReply,
  IntakeLogPage,
  Journey,
  JourneyPage,
  Message,
  NewApiKey,
  NewApiKeyBody,
  NewTopicBody,
  OperationType,
  Permission,
  ProblemsReply,
  Profile,
  ProfilePage,
  ReidentifyBody,
  Topic,
  TopicPage,
  TopicPatch,
  TrackBody,
  UserEventPage,
  UserExport,
  UserRefBody,
  WebhookList,
} from "@cm/domain";
import {
  CHANGE_PAGE_DEFAULT,
  CHANGE_PAGE_MAX,
  CHANGE_TYPES,
  CHANGE_WAIT_MAX_S,
  INTAKE_DOORS,
  INTAKE_OUTCOMES,
  INTAKE_PAGE_DEFAULT,
  INTAKE_PAGE_MAX,
  INTAKE_WAIT_MAX_S,
  JOURNEY_STATUSES,
  OPERATION_TYPES,
} from "@cm/domain";
import typia from "typia";

/** Vero's users API takes its credential in the body too, instead of the query string (auth/repeated-credentials.ts). */
interface IdentifyCredentialFields {
  /** The identify auth token, when not in the query string. */
  auth_token?: string;
  /** Vero's newer name for the same credential. */
  tracking_api_key?: string;
}

/** The bodies of Vero's users API as sent, credential included. */
type IdentifyRequest = IdentifyBody & IdentifyCredentialFields;
type EditUserRequest = EditUserBody & IdentifyCredentialFields;
type EditTagsRequest = EditTagsBody & IdentifyCredentialFields;
type UserRefRequest = UserRefBody & IdentifyCredentialFields;
type ReidentifyRequest = ReidentifyBody & IdentifyCredentialFields;
type TrackRequest = TrackBody & IdentifyCredentialFields;
/** A JSON batch; an NDJSON batch's credential can only be in the query string. */
type BatchRequest = BatchBody & IdentifyCredentialFields;

// Request bodies are the types the gateway validates with; responses are the resources of @cm/domain.
export const schemas = typia.json.schemas<
  [
    IdentifyRequest,
    TopicPatch,
    NewTopicBody,
    IdentifyReply,
    ErrorReply,
    ProblemsReply,
    Topic,
    TopicPage,
    Profile,
    ProfilePage,
    Journey,
    Message,
    EditUserRequest,
    EditTagsRequest,
    UserRefRequest,
    ReidentifyRequest,
    TrackRequest,
    UserEventPage,
    JourneyPage,
    UserExport,
    BatchRequest,
    BatchReply,
    ChangePage,
    // API keys and webhooks
    NewApiKeyBody,
    ApiKeyList,
    NewApiKey,
    WebhookList,
    IntakeLogPage,
  ],
  "3.1"
>();

// One reference per type above, in the same order (an alias keeps its target's name).
const [
  identifyBody,
  topicPatch,
  newTopicBody,
  identifyReply,
  errorReply,
  problemsReply,
  topic,
  topicPage,
  profile,
  profilePage,
  journey,
  message,
  editUserBody,
  editTagsBody,
  userRefBody,
  reidentifyBody,
  trackBody,
  userEventPage,
  journeyPage,
  userExport,
  batchBody,
  batchReply,
  changePage,
  // API keys and webhooks
  newApiKeyBody,
  apiKeyList,
  newApiKey,
  webhookList,
  intakeLogPage,
] = schemas.schemas as { $ref: string }[];
const json = (schema: object | undefined, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

const identifyError = (description: string) => json(identifyReply, description);
const error = (description: string) => json(errorReply, description);
const problems = (description: string) => json(problemsReply, description);

/** The query parameters of every list paged by a cursor. */
const pageParameters = [
  { name: "limit", in: "query", required: false, schema: { type: "integer", minimum: 1, maximum: 100, default: 25 } },
  { name: "cursor", in: "query", required: false, schema: { type: "string" } },
];

const revisionHeader = {
  name: "revision",
  in: "header",
  required: false,
  description: "Dated API revision (YYYY-MM-DD); the newest revision on or before it applies. Absent: the latest.",
  schema: { type: "string", pattern: "^\\d{4}-\\d{2}-\\d{2}$" },
};
const appliedRevision = {
  description: "The date of the revision the answer is written in (the latest when the request's header names none)",
  schema: { type: "string", pattern: "^\\d{4}-\\d{2}-\\d{2}$" },
};
type Response = { description: string; headers?: Record<string, object> };
/** Every answer of an operation that takes the revision header names the revision applied, errors included. */
const revisioned = (responses: Record<string, Response>) =>
  Object.fromEntries(
    Object.entries(responses).map(([status, response]) => [
      status,
      { ...response, headers: { ...response.headers, revision: appliedRevision } },
    ]),
  );

const count = (description: string) => ({ description, schema: { type: "string", pattern: "^\\d+$" } });
const rateLimitHeaders = {
  "RateLimit-Limit": count(
    "Requests the project may send at once: its bucket's capacity (RATE_LIMIT_BURST, across all gateways), " +
      "refilled at RATE_LIMIT_PER_SECOND",
  ),
  "RateLimit-Remaining": count("Requests the project may still send now, at most RateLimit-Limit"),
  "RateLimit-Reset": count("Seconds until the project's allowance is whole again"),
};
/**
 * Answers to authenticated requests name the project's rate limit (RateLimit-* headers, IETF
 * draft); past it the answer is 429 with Retry-After.
 */
const limited = (responses: Record<string, Response>, tooMany: Response) => ({
  ...Object.fromEntries(
    Object.entries(responses).map(([status, response]) => [
      status,
      status.startsWith("2") ? { ...response, headers: { ...response.headers, ...rateLimitHeaders } } : response,
    ]),
  ),
  "429": { ...tooMany, headers: { ...rateLimitHeaders, "Retry-After": count("Seconds to wait before sending again") } },
});
/** One request of the operation, as a person would type it (rendered on /docs). */
const curl = (source: string) => ({ "x-codeSamples": [{ lang: "curl", label: "curl", source }] });
const pathId = (description: string) => ({
  name: "id",
  in: "path",
  required: true,
  description,
  schema: { type: "integer" },
});

/** A bigserial id (an API key's, a webhook endpoint's), shown as text: it may exceed JSON's safe integers. */
const textId = (description: string) => ({
  ...pathId(description),
  schema: { type: "string", pattern: "^[1-9][0-9]{0,17}$" },
});

const rateLimited = error("The project sent more than its rate limit");
const keyFailures = {
  "400": problems("The revision header is malformed or older than the first revision"),
  "401": error("Missing or invalid API key"),
  "403": error("The key lacks the required permission"),
  "500": error("An unexpected fault; the log has the details under the request id"),
  "503": error("The key cannot be checked, or Postgres reached, right now; see Retry-After"),
};

/** What one operation of Vero's users API takes: its schema, with a JSON example and a form or NDJSON one. */
interface UsersApiRequest {
  operationId: string;
  /** A single operation: the type its body is read as (`parseOperation`). The batch reads each of its items so. */
  operationType?: OperationType;
  summary: string;
  /** What this operation does; the rules every users-API operation shares follow it. */
  description: string;
  schema: object | undefined;
  example: object;
  /** The same body as a form sends it (`data[plan]=pro`): nested fields, every value text. */
  form?: object;
  ndjson?: string;
  parameters?: object[];
  /** The batch's: what a single operation's differ in. */
  rules?: string;
  responses?: typeof usersApiResponses;
}

const USERS_API_RULES =
  "The credential is the project's identify auth token, as `auth_token` or `tracking_api_key`, in the query string or " +
  "as a top-level field of the body (JSON or form); when several are given they must agree. The body is JSON whatever " +
  "its content type says, or `application/x-www-form-urlencoded` with bracket nesting (`data[age]=20`, " +
  "`channels[0][type]=push`); form values stay text, and a form `data` or `changes` field holding a JSON object is " +
  "that object. A null top-level field counts as not given. Unknown top-level fields are ignored. The path also " +
  "answers with a `.json` suffix. See docs/integrations.md and docs/profiles.md.";

const usersApiAnswers = {
  "200": json(identifyReply, "Accepted and durably queued; applied asynchronously"),
  "400": identifyError("Bad Request: the reason is in the x-error-detail header"),
  "401": identifyError("Missing or invalid credential, or credentials that disagree"),
  "404": identifyError("Unknown path or method"),
  "413": identifyError("Body larger than 256 KiB"),
  "500": identifyError("The operation could not be queued; nothing was accepted"),
  "503": identifyError(
    "Busy (bodies in flight, Redis full or not keeping up, a flood of unknown tokens); see Retry-After",
  ),
};
const usersApiTooMany = identifyError("The project sent more than its rate limit");
const usersApiResponses = limited(usersApiAnswers, usersApiTooMany);

/** The types a batch item may name, as its description lists them. */
const BATCH_TYPES = OPERATION_TYPES.map((type) => `\`${type}\``).join(", ");

const BATCH_RULES =
  "The credential is the identify auth token, as for every users-API operation: `auth_token` or `tracking_api_key` " +
  "in the query string, or as a top-level field of a JSON body (an NDJSON body has no room for it). The body is " +
  "JSON, whatever its content type says, or NDJSON with `Content-Type: application/x-ndjson`. A batch counts as one " +
  "request against the rate limit. The path also answers with a `.json` suffix. See docs/bulk.md.";

const batchResponses = limited(
  {
    ...usersApiAnswers,
    "200": json(
      batchReply,
      "Every accepted operation is durably queued: `results` holds one answer per operation, in order, " +
        '`{status: 200, message: "Success."}` or `{status: 400, message: <the reason>}`',
    ),
    "400": identifyError(
      "Not a batch (not JSON, nested deeper than an operation may be, no `batch` list), none or more than " +
        "1,000 operations, or an Idempotency-Key over 255 characters: the reason is in the x-error-detail header",
    ),
    "409": identifyError("A batch with this Idempotency-Key is still being answered; see Retry-After"),
    "413": identifyError("Body larger than 5 MiB"),
    "422": identifyError(
      "This Idempotency-Key was sent before with another body, or the same text read another way (JSON, NDJSON)",
    ),
    "500": identifyError("An operation could not be queued; retry with the same Idempotency-Key"),
  },
  usersApiTooMany,
);

type Method = "get" | "post" | "put" | "patch" | "delete";

/** An operation's entry in the OpenAPI document. */
export interface Operation {
  operationId: string;
  summary: string;
  description?: string;
  [field: string]: unknown;
}

/**
 * One operation of the API, declared once: where it answers, who may call it, and its
 * reference entry (request and answer schemas, errors). The routers register it from here
 * and the OpenAPI document lists it from here.
 */
export interface Route {
  method: Method;
  /** Under /api/v2, as OpenAPI writes it (`/topics/{id}`). */
  path: string;
  /** `identifyToken`: Vero's auth token, in the query string or the body; `apiKey`: a key holding `permission`. */
  credential: "identifyToken" | "apiKey" | "none";
  permission?: Permission;
  operation: Operation;
  /** The same operation on other methods or paths (Vero's `.json` twins), each listed as its alias. */
  aliases: { method: Method; path: string; operation: Operation }[];
  /** A single operation of Vero's users API: the type its body is read as, by which the router registers it (routes/users-api.ts). */
  operationType?: OperationType;
}

/** Where Koa's router matches `route`'s path (`/topics/:id`). */
export const koaPath = (path: string) => path.replace(/\{(\w+)\}/g, ":$1");

/** An operation anyone may call. */
const withoutCredential = (method: Method, path: string, operation: Operation): Route => ({
  method,
  path,
  credential: "none",
  operation,
  aliases: [],
});

/**
 * An operation of the key-authenticated API: an API key holding `permission`, the revision
 * header, and the answers every such operation can give besides its own.
 */
const keyRoute = (
  method: Method,
  path: string,
  permission: Permission,
  operation: Operation & { parameters?: object[]; responses: Record<string, Response> },
): Route => ({
  method,
  path,
  credential: "apiKey",
  permission,
  operation: {
    ...operation,
    summary: `${operation.summary} (permission ${permission})`,
    parameters: [...(operation.parameters ?? []), revisionHeader],
    responses: revisioned(limited({ ...keyFailures, ...operation.responses }, rateLimited)),
  },
  aliases: [],
});

/**
 * The operation on Vero's path and on its `.json` twin, for each method its clients send. The
 * first method on the plain path is the operation, with `operationId`; other methods and the
 * twin are its aliases, whose ids add a suffix.
 */
function usersApiRoute(path: string, methods: [Method, ...Method[]], request: UsersApiRequest): Route {
  const operation = (method: Method, twin: string, operationId: string): Operation => ({
    operationId,
    summary: request.summary,
    description: `${request.description} ${request.rules ?? USERS_API_RULES}`,
    ...(request.parameters === undefined ? {} : { parameters: request.parameters }),
    requestBody: {
      required: true,
      content: {
        "application/json": { schema: request.schema, example: request.example },
        ...(request.form === undefined
          ? {}
          : { "application/x-www-form-urlencoded": { schema: request.schema, example: request.form } }),
        ...(request.ndjson === undefined
          ? {}
          : { "application/x-ndjson": { schema: { type: "string" }, example: request.ndjson } }),
      },
    },
    responses: request.responses ?? usersApiResponses,
    ...curl(
      `curl -X ${method.toUpperCase()} 'http://localhost:3000/api/v2${twin}?auth_token=AUTH_TOKEN' ` +
        `-H 'Content-Type: application/json' -d '${JSON.stringify(request.example)}'`,
    ),
  });
  const answering = [path, `${path}.json`].flatMap((twin) =>
    methods.map((method, index) => {
      const methodSuffix = index === 0 ? "" : `With${method.charAt(0).toUpperCase()}${method.slice(1)}`;
      const twinSuffix = twin === path ? "" : "JsonPath";
      return {
        method,
        path: twin,
        operation: operation(method, twin, `${request.operationId}${methodSuffix}${twinSuffix}`),
      };
    }),
  );
  const [main, ...aliases] = answering as [Route["aliases"][number], ...Route["aliases"]];
  const reads = request.operationType === undefined ? {} : { operationType: request.operationType };
  return { ...main, credential: "identifyToken", aliases, ...reads };
}

const identify: UsersApiRequest = {
  operationId: "identifyUser",
  operationType: "identify",
  summary: "Identify a user: create or update a profile",
  description: "`channels` may be one object.",
  schema: identifyBody,
  example: { id: "user-1", email: "ada@example.com", data: { plan: "pro", age: 36 } },
  form: { auth_token: "AUTH_TOKEN", id: "user-1", email: "ada@example.com", data: { plan: "pro", age: "36" } },
};

/** Every operation of the API under /api/v2, by its operationId, in the order the document lists them. */
export const ROUTES = {
  identifyUser: usersApiRoute("/users/track", ["post"], identify),
  editUser: usersApiRoute("/users/edit", ["put"], {
    operationId: "editUser",
    operationType: "edit",
    summary: "Edit a user: set or clear data keys of a profile, never creating one",
    description:
      "Names the user by `id`, or by `email` for a user known by email alone. Each key of `changes` is set in the " +
      "profile's data; a null value clears it. PHP's empty `changes: []` counts as `{}`. See docs/profiles.md.",
    schema: editUserBody,
    example: { id: "user-1", changes: { plan: "enterprise", trial_ends: null } },
    form: { auth_token: "AUTH_TOKEN", id: "user-1", changes: { plan: "enterprise" } },
  }),
  editTags: usersApiRoute("/users/tags/edit", ["put"], {
    operationId: "editTags",
    operationType: "tags",
    summary: "Add and remove tags of a user",
    description:
      "Names the user by `id` or `email`. `add` and `remove` are lists of tags, or JSON text of one (as n8n sends " +
      "them); tags are trimmed, empty ones dropped, and at least one must remain. A tag in both lists is added.",
    schema: editTagsBody,
    example: { id: "user-1", add: ["vip"], remove: ["trial"] },
    form: { auth_token: "AUTH_TOKEN", id: "user-1", add: ["vip"], remove: ["trial"] },
  }),
  unsubscribeUser: usersApiRoute("/users/unsubscribe", ["post"], {
    operationId: "unsubscribeUser",
    operationType: "unsubscribe",
    summary: "Unsubscribe a user from everything (the global opt-out)",
    description: "Names the user by `id` or `email`. Topic choices are kept for a resubscribe.",
    schema: userRefBody,
    example: { id: "user-1" },
    form: { auth_token: "AUTH_TOKEN", id: "user-1" },
  }),
  resubscribeUser: usersApiRoute("/users/resubscribe", ["post"], {
    operationId: "resubscribeUser",
    operationType: "resubscribe",
    summary: "Resubscribe a user: lift the global opt-out",
    description: "Names the user by `id` or `email`; the topic choices kept come back.",
    schema: userRefBody,
    example: { id: "user-1" },
    form: { auth_token: "AUTH_TOKEN", id: "user-1" },
  }),
  // Clients send PUT; Vero's 2016 documentation sent POST (curl -d).
  reidentifyUser: usersApiRoute("/users/reidentify", ["put", "post"], {
    operationId: "reidentifyUser",
    operationType: "reidentify",
    summary: "Reidentify a user: `id` and `new_id` name one profile from now on",
    description:
      "Both ids are required and must differ. The profile reads under `new_id`; when `new_id` already names a " +
      "profile, the two merge. POST is accepted as Vero's 2016 documentation sent it.",
    schema: reidentifyBody,
    example: { id: "anonymous-7", new_id: "user-1" },
    form: { auth_token: "AUTH_TOKEN", id: "anonymous-7", new_id: "user-1" },
  }),
  // vero-python 2.x deletes with DELETE, every other client with POST.
  deleteUser: usersApiRoute("/users/delete", ["post", "delete"], {
    operationId: "deleteUser",
    operationType: "delete",
    summary: "Delete a user: erase the profile for good",
    description:
      "Names the user by `id` or `email`. DELETE is accepted as vero-python 2.x sends it. See docs/profiles.md for " +
      "what an erasure keeps.",
    schema: userRefBody,
    example: { id: "user-1" },
    form: { auth_token: "AUTH_TOKEN", id: "user-1" },
  }),
  trackEvent: usersApiRoute("/events/track", ["post"], {
    operationId: "trackEvent",
    operationType: "track",
    summary: "Track an event of a user (docs/events.md)",
    description:
      "`identity` names the user by `id`, or by `email` for a user known by email alone; a user who is no profile " +
      "gets one. `identity`, `data` and `extras` may be JSON text (n8n, form clients). Two events of a user with " +
      "the same name (case, spaces, `_` and `-` ignored) and data (else `extras.check_id`) received within " +
      "EVENT_DEDUP_WINDOW_S are one; an `Idempotency-Key` header or `extras.message_id` makes events with that " +
      "key one for 7 days. A duplicate answers 200 like any event.",
    schema: trackBody,
    example: {
      identity: { id: "user-1", email: "ada@example.com" },
      event_name: "Viewed Product",
      data: { sku: "A-1", price: 12 },
      extras: { source: "web" },
    },
    form: {
      auth_token: "AUTH_TOKEN",
      identity: { id: "user-1" },
      event_name: "Viewed Product",
      data: { sku: "A-1" },
    },
  }),
  batch: usersApiRoute("/batch", ["post"], {
    operationId: "batch",
    summary: "Up to 1,000 operations of the users API and event tracking in one request (docs/bulk.md)",
    description:
      `Each operation is \`{type, …the body of its single call}\`, \`type\` one of ${BATCH_TYPES}, and is read ` +
      "on its own: the valid ones are queued, the others answered 400 with the reason, in `results`. Operations of " +
      "one user apply in their order in the batch, after every request answered before it and before every " +
      "request sent after its answer. " +
      "With an `Idempotency-Key` header, a retry of the batch within 7 days gets the same answer and queues " +
      "nothing again.",
    schema: batchBody,
    example: {
      batch: [
        { type: "identify", id: "user-1", email: "ada@example.com", data: { plan: "pro" } },
        { type: "tags", id: "user-1", add: ["vip"] },
        { type: "track", identity: { id: "user-1" }, event_name: "Upgraded" },
      ],
    },
    ndjson:
      '{"type":"identify","id":"user-1","email":"ada@example.com"}\n{"type":"tags","id":"user-1","add":["vip"]}\n',
    parameters: [
      {
        name: "Idempotency-Key",
        in: "header",
        required: false,
        description: "Names the batch for 7 days: a retry with the same key and body gets the first answer",
        schema: { type: "string", minLength: 1, maxLength: 255 },
      },
    ],
    rules: BATCH_RULES,
    responses: batchResponses,
  }),
  heartbeat: withoutCredential("get", "/heartbeat", {
    operationId: "heartbeat",
    summary: "Vero's heartbeat: answers while the gateway runs",
    description: "Vero's clients call it to check the API is there; it needs no credential and checks nothing else.",
    responses: { "200": identifyError("Success.") },
    ...curl("curl http://localhost:3000/api/v2/heartbeat"),
  }),
  listUserEvents: keyRoute("get", "/users/{id}/events", "profile:read", {
    operationId: "listUserEvents",
    summary: "A user's events, newest first, cursor-paginated",
    description:
      "The events of every id linked with the user by a reidentify. `event_name` matches with case, spaces, `_` " +
      "and `-` ignored; `since` (included) and `until` (excluded) bound when they happened (ISO 8601 or Unix " +
      "seconds, years 0001 to 9999). An unknown user has no events.",
    parameters: [
      { ...pathId("The user's id, or its email for a user known only by email"), schema: { type: "string" } },
      ...pageParameters,
      { name: "event_name", in: "query", required: false, schema: { type: "string" } },
      { name: "since", in: "query", required: false, schema: { type: "string" } },
      { name: "until", in: "query", required: false, schema: { type: "string" } },
    ],
    responses: {
      "200": json(userEventPage, "A page of the user's events"),
      "422": problems("Bad limit, cursor, event_name or time bound"),
    },
    ...curl("curl http://localhost:3000/api/v2/users/user-1/events?limit=10 -H 'Authorization: Bearer API_KEY'"),
  }),
  exportUser: keyRoute("get", "/users/{id}/export", "profile:read", {
    operationId: "exportUser",
    summary: "Everything stored about one user, for a data-subject access request",
    description:
      "The profile as the profile read shows it, every id a reidentify linked with the user, the operations a " +
      "worker refused because of their input (dead letters) and every event, oldest first, as one JSON document. " +
      "Operations still in the queue are not in it yet.",
    parameters: [
      {
        ...pathId("Any of the user's ids, or its email for a user known only by email"),
        schema: { type: "string" },
      },
    ],
    responses: {
      "200": json(userExport, "Everything stored about the user"),
      "404": error("Nothing is stored about such a user"),
    },
    ...curl("curl http://localhost:3000/api/v2/users/user-1/export -H 'Authorization: Bearer API_KEY'"),
  }),
  listUsers: keyRoute("get", "/users", "profile:read", {
    operationId: "listUsers",
    summary: "Find profiles by email, tag, opt-out or last change, cursor-paginated",
    description:
      "Each profile as the profile read shows it, once, under its current id. A page reads at most 2,000 " +
      "stored profiles (of the address, with `email`), and merges the stored rows of at most 2,000 ids into " +
      "the profiles it lists (a profile of many reidentified ids counts each): it can hold fewer profiles " +
      "than `limit`, or none, while `next_cursor` is not null. Follow `next_cursor` until it is null.",
    parameters: [
      ...pageParameters,
      {
        name: "email",
        in: "query",
        required: false,
        description: "Ignoring the case of ASCII letters",
        schema: { type: "string", minLength: 1, maxLength: 254 },
      },
      { name: "tag", in: "query", required: false, schema: { type: "string", minLength: 1, maxLength: 255 } },
      { name: "unsubscribed", in: "query", required: false, schema: { type: "string", enum: ["true", "false"] } },
      {
        name: "updated_since",
        in: "query",
        required: false,
        description: "ISO 8601 date-time with a time zone, or Unix seconds, years 0001 to 9999",
        schema: { type: "string" },
      },
    ],
    responses: {
      "200": json(profilePage, "A page of profiles"),
      "422": problems("Bad limit, cursor, email, tag, unsubscribed or updated_since"),
    },
    ...curl("curl 'http://localhost:3000/api/v2/users?email=ada%40example.com' -H 'Authorization: Bearer API_KEY'"),
  }),
  getProfile: keyRoute("get", "/users/{id}", "profile:read", {
    operationId: "getProfile",
    summary: "Read a profile as the workers have applied it",
    description:
      "It trails identify by the time the queue takes to drain. Any id a reidentify linked with the profile reads it too, under its current id; an erased profile is not found.",
    parameters: [
      { ...pathId("The profile's id, or its email for a profile known only by email"), schema: { type: "string" } },
    ],
    responses: { "200": json(profile, "The profile"), "404": error("No such profile") },
    ...curl("curl http://localhost:3000/api/v2/users/user-1 -H 'Authorization: Bearer API_KEY'"),
  }),
  listTopics: keyRoute("get", "/topics", "campaign:read", {
    operationId: "listTopics",
    summary: "List topics, cursor-paginated",
    description:
      "Topics come in id order; `next_cursor` is null on the last page. Cursors are opaque: pass them back as they are.",
    parameters: [...pageParameters],
    responses: { "200": json(topicPage, "A page of topics"), "422": problems("Bad limit or cursor") },
    ...curl("curl 'http://localhost:3000/api/v2/topics?limit=25' -H 'Authorization: Bearer API_KEY'"),
  }),
  createTopic: keyRoute("post", "/topics", "campaign:write", {
    operationId: "createTopic",
    summary: "Create a topic",
    description:
      "`name` is required, 1 to 255 characters once trimmed and unique in the project ignoring case; `default_status` is `subscribed` when left out. Creating a topic changes no profile: profiles read its default until they make a choice.",
    requestBody: { required: true, content: { "application/json": { schema: newTopicBody } } },
    responses: {
      "201": json(topic, "The new topic"),
      "409": problems("Another topic of the project has this name, ignoring case"),
      "422": problems("The body breaks a rule"),
    },
    ...curl(
      `curl -X POST http://localhost:3000/api/v2/topics -H 'Authorization: Bearer API_KEY' -H 'Content-Type: application/json' -d '{"name":"Newsletter","default_status":"subscribed"}'`,
    ),
  }),
  updateTopic: keyRoute("patch", "/topics/{id}", "campaign:write", {
    operationId: "updateTopic",
    summary: "Update a topic",
    description:
      "A field left out keeps its value; `description: null` clears it; a patch that changes nothing writes nothing. A new `default_status` applies at once to every profile without an explicit choice for the topic.",
    parameters: [pathId("The topic id")],
    requestBody: { required: true, content: { "application/json": { schema: topicPatch } } },
    responses: {
      "200": json(topic, "The updated topic"),
      "404": error("Unknown topic, or a topic of another project"),
      "409": problems("Another topic of the project has this name, ignoring case"),
      "422": problems("Empty patch, unknown property, wrong type or length"),
    },
    ...curl(
      `curl -X PATCH http://localhost:3000/api/v2/topics/TOPIC_ID -H 'Authorization: Bearer API_KEY' -H 'Content-Type: application/json' -d '{"default_status":"unsubscribed"}'`,
    ),
  }),
  listJourneys: keyRoute("get", "/journeys", "campaign:read", {
    operationId: "listJourneys",
    summary: "List journeys without their graphs, cursor-paginated, of one status or all",
    description: "Journeys come in id order, each without `nodes` and `edges`; `next_cursor` is null on the last page.",
    parameters: [
      ...pageParameters,
      {
        name: "status",
        in: "query",
        required: false,
        schema: { type: "string", enum: [...JOURNEY_STATUSES] },
      },
    ],
    responses: {
      "200": json(journeyPage, "A page of journeys"),
      "422": problems("Bad limit, cursor or status"),
    },
    ...curl("curl 'http://localhost:3000/api/v2/journeys?status=active' -H 'Authorization: Bearer API_KEY'"),
  }),
  getJourney: keyRoute("get", "/journeys/{id}", "campaign:read", {
    operationId: "getJourney",
    summary: "Get a journey with its full graph",
    description:
      "Its trigger, nodes and edges, message and content metadata only (no content bodies). Archived journeys are returned too.",
    parameters: [pathId("The journey id")],
    responses: { "200": json(journey, "The journey"), "404": error("Unknown journey") },
    ...curl(
      "curl http://localhost:3000/api/v2/journeys/JOURNEY_ID -H 'Authorization: Bearer API_KEY' -H 'revision: 2023-01-01'",
    ),
  }),
  listJourneyMessages: keyRoute("get", "/journeys/{id}/messages", "campaign:read", {
    operationId: "listJourneyMessages",
    summary: "List the messages of a journey, by node id",
    description:
      "One message per message node of the journey, with its contents: the default first, then by locale. A journey without message nodes gives an empty list.",
    parameters: [pathId("The journey id")],
    responses: {
      "200": json({ type: "array", items: message }, "One message per message node"),
      "404": error("Unknown journey"),
    },
    ...curl("curl http://localhost:3000/api/v2/journeys/JOURNEY_ID/messages -H 'Authorization: Bearer API_KEY'"),
  }),
  readChanges: keyRoute("get", "/changes", "changes:read", {
    operationId: "readChanges",
    summary: "Read the project's change feed: its changes in the order they were applied (docs/changes.md)",
    description:
      "Profile changes (created, changed fields with their new values, tags, unsubscribe and resubscribe, topic " +
      "choices, reidentify, erasure) and stored events, each once, in the order they were applied: a reader that " +
      "passes back `next` (or the `position` of the last change it handled) as `after` misses none and gets none " +
      "twice. `next` is always given, and may move past changes a `types` filter left out, or past the end with " +
      "none. With `wait`, the answer comes as soon as there is a change after `after`, or empty after that many " +
      "seconds. Changes are kept CHANGE_RETENTION_DAYS (7); a cursor from before what was removed answers 410.",
    parameters: [
      {
        name: "after",
        in: "query",
        required: false,
        description: "A cursor this feed gave (`next`, or a change's `position`); absent: from the oldest change kept",
        schema: { type: "string" },
      },
      {
        name: "limit",
        in: "query",
        required: false,
        description:
          "Changes a page holds at most; fewer when their stored rows pass 4 MiB (at least one change): read on from `next`",
        schema: { type: "integer", minimum: 1, maximum: CHANGE_PAGE_MAX, default: CHANGE_PAGE_DEFAULT },
      },
      {
        name: "types",
        in: "query",
        required: false,
        description: `Only changes of these types, comma-separated: ${CHANGE_TYPES.join(", ")}`,
        schema: { type: "string" },
      },
      {
        name: "wait",
        in: "query",
        required: false,
        description: "Seconds to wait for a change when there is none yet (long-poll)",
        schema: { type: "integer", minimum: 0, maximum: CHANGE_WAIT_MAX_S, default: 0 },
      },
    ],
    responses: {
      "200": json(changePage, "The changes after `after`, oldest first, and the cursor to read on from"),
      "400": problems(
        "A cursor not of this project's feed, a bad limit, types or wait, or a malformed or too old revision header",
      ),
      "410": problems("Retention removed changes after this cursor: reading on from it would skip them"),
    },
    ...curl("curl 'http://localhost:3000/api/v2/changes?limit=100&wait=10' -H 'Authorization: Bearer API_KEY'"),
  }),
  // API keys and webhooks (api.md "API keys", "Webhooks")
  listKeys: keyRoute("get", "/keys", "keys:read", {
    operationId: "listKeys",
    summary: "List the project's API keys, never their secrets",
    description:
      "Every API key of the project, oldest first, revoked and expired ones included: `working` says whether it is accepted. A key's secret is not stored, so it is never shown again.",
    responses: { "200": json(apiKeyList, "The project's API keys") },
    ...curl("curl http://localhost:3000/api/v2/keys -H 'Authorization: Bearer API_KEY'"),
  }),
  createKey: keyRoute("post", "/keys", "keys:write", {
    operationId: "createKey",
    summary: "Create an API key, shown this once",
    description:
      "The new key holds `permissions`, each of which the calling key must hold itself: a key never creates a key that can do more than it can. The answer holds the key (`api_key`) this once: only a hash of its secret is stored.",
    requestBody: { required: true, content: { "application/json": { schema: newApiKeyBody } } },
    responses: {
      "201": json(newApiKey, "The new key, with its secret this once"),
      "403": json(
        { oneOf: [errorReply, problemsReply] },
        'The calling key lacks keys:write (`{"error": "forbidden"}`), or permissions asked for (`{"errors": […]}` naming them)',
      ),
      "422": problems('The body is not `{"permissions": [...]}` of known permissions'),
    },
    ...curl(
      `curl -X POST http://localhost:3000/api/v2/keys -H 'Authorization: Bearer API_KEY' -H 'Content-Type: application/json' -d '{"permissions":["changes:read"]}'`,
    ),
  }),
  revokeKey: keyRoute("delete", "/keys/{id}", "keys:write", {
    operationId: "revokeKey",
    summary: "Revoke an API key",
    description:
      "The key stops working at once on the gateway that answered and within 30 s on every other. A key may revoke itself.",
    parameters: [textId("The key's id (its token's middle part)")],
    responses: {
      "204": { description: "Revoked" },
      "404": error("No working key of this id in the project (unknown, another project's, revoked or expired)"),
    },
    ...curl("curl -X DELETE http://localhost:3000/api/v2/keys/KEY_ID -H 'Authorization: Bearer API_KEY'"),
  }),
  listWebhooks: keyRoute("get", "/webhooks", "webhooks:read", {
    operationId: "listWebhooks",
    summary: "List the project's webhook endpoints and where each stands",
    description:
      "Every endpoint, oldest first, revoked ones included: its state, its lag behind the change feed, its last failure. Never a signing secret; the URL shows its origin only, what follows as `/***`. Endpoints are created with the admin command line (docs/webhooks.md).",
    responses: { "200": json(webhookList, "The project's webhook endpoints") },
    ...curl("curl http://localhost:3000/api/v2/webhooks -H 'Authorization: Bearer API_KEY'"),
  }),
  replayWebhook: keyRoute("post", "/webhooks/{id}/replay", "webhooks:write", {
    operationId: "replayWebhook",
    summary: "Replay a parked webhook endpoint",
    description:
      "The endpoint is delivered to again from the batch it failed, at the next poll, its failed tries counted from 0.",
    parameters: [textId("The endpoint's id")],
    responses: {
      "204": { description: "Active again" },
      "404": error("No endpoint of this id in the project"),
      "409": problems("The endpoint is not parked (active, or revoked)"),
    },
    ...curl("curl -X POST http://localhost:3000/api/v2/webhooks/WEBHOOK_ID/replay -H 'Authorization: Bearer API_KEY'"),
  }),
  readIntakeLog: keyRoute("get", "/intake-log", "intake:read", {
    operationId: "readIntakeLog",
    summary: "Read what the project's intake received lately, accepted or refused (docs/intake-log.md)",
    description:
      "Each request the users API, the batch (an entry per operation: its first 50 accepted and first 50 refused), " +
      "the /v1 API (an entry per message, a batch's as the batch's) and `ctl import` (an entry per record) received " +
      "for the project, oldest first: when, which door, accepted or " +
      "refused with the status and reason answered, the user it names, and its body as received (the first " +
      "INTAKE_LOG_BODY_BYTES, 2 KiB). For setting up an integration: the log is best effort, keeps about " +
      "INTAKE_LOG_MAX_ENTRIES (10,000) entries for at most INTAKE_LOG_MAX_AGE_S (24 hours), and holds no request " +
      "whose credential was refused. `next` is always given, and may move past entries a filter left out. With " +
      "`wait`, the answer comes as soon as there is an entry after `after`, or empty after that many seconds.",
    parameters: [
      {
        name: "after",
        in: "query",
        required: false,
        description: "A cursor this log gave (`next`, or an entry's `position`); absent: from the oldest entry kept",
        schema: { type: "string" },
      },
      {
        name: "limit",
        in: "query",
        required: false,
        schema: { type: "integer", minimum: 1, maximum: INTAKE_PAGE_MAX, default: INTAKE_PAGE_DEFAULT },
      },
      {
        name: "wait",
        in: "query",
        required: false,
        description: "Seconds to wait for an entry when there is none yet (long-poll)",
        schema: { type: "integer", minimum: 0, maximum: INTAKE_WAIT_MAX_S, default: 0 },
      },
      {
        name: "door",
        in: "query",
        required: false,
        description: "Only entries of this door",
        schema: { type: "string", enum: [...INTAKE_DOORS] },
      },
      {
        name: "outcome",
        in: "query",
        required: false,
        description: "Only accepted, or only refused, entries",
        schema: { type: "string", enum: [...INTAKE_OUTCOMES] },
      },
      {
        name: "user_id",
        in: "query",
        required: false,
        description: "Only entries naming this user",
        schema: { type: "string" },
      },
    ],
    responses: {
      "200": json(intakeLogPage, "The entries after `after`, oldest first, and the cursor to read on from"),
      "400": problems(
        "A cursor not of this project's log, a bad limit, wait, door or outcome, or a malformed or too old revision header",
      ),
    },
    ...curl(
      "curl 'http://localhost:3000/api/v2/intake-log?outcome=refused&wait=10' -H 'Authorization: Bearer API_KEY'",
    ),
  }),
} satisfies Record<string, Route>;
