import type {
  ErrorReply,
  IdentifyReply,
  IdentifyRequest,
  Journey,
  Message,
  NewTopicBody,
  ProblemsReply,
  Profile,
  Topic,
  TopicPage,
  TopicPatch,
} from "@cm/domain";
import typia from "typia";

// Request bodies are the types the gateway validates with; responses are the resources of @cm/domain.
const schemas = typia.json.schemas<
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
    Journey,
    Message,
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
  journey,
  message,
] = schemas.schemas as { $ref: string }[];
const json = (schema: object | undefined, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

const identifyError = (description: string) => json(identifyReply, description);
const error = (description: string) => json(errorReply, description);
const problems = (description: string) => json(problemsReply, description);

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
  "RateLimit-Limit": count("Requests a second the project may send (RATE_LIMIT_PER_SECOND, across all gateways)"),
  "RateLimit-Remaining": count("Requests the project may still send now"),
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

const rateLimited = error("The project sent more than its rate limit");
const keyFailures = {
  "400": problems("The revision header is malformed or older than the first revision"),
  "401": error("Missing or invalid API key"),
  "403": error("The key lacks the required permission"),
  "503": error("The key cannot be checked right now; see Retry-After"),
};

const identifyExample = { id: "user-1", email: "ada@example.com", data: { plan: "pro", age: 36 } };

/** Identify answers on Vero's path and on its `.json` twin, as Vero's clients call it. */
function identifyOperation(operationId: string) {
  return {
    operationId,
    summary: "Identify a user: create or update a profile",
    description:
      "The credential is the project's identify auth token, as `auth_token` or `tracking_api_key`, in the query string or " +
      "as a top-level field of the body (JSON or form); when several are given they must agree. The body is JSON whatever " +
      "its content type says, or `application/x-www-form-urlencoded` with bracket nesting (`data[age]=20`, " +
      "`channels[0][type]=push`); form values stay text, and a form `data` field holding a JSON object is that object. " +
      "A null top-level field counts as not given; `channels` may be one object. Unknown top-level fields are ignored. " +
      "The path also answers with a `.json` suffix. See docs/integrations.md.",
    security: [{ authToken: [] }, { trackingApiKey: [] }, {}],
    requestBody: {
      required: true,
      content: {
        "application/json": { schema: identifyBody, example: identifyExample },
        "application/x-www-form-urlencoded": {
          schema: identifyBody,
          example: "auth_token=AUTH_TOKEN&id=user-1&email=ada%40example.com&data[plan]=pro&data[age]=36",
        },
      },
    },
    responses: limited(
      {
        "200": json(identifyReply, "Accepted and durably queued; applied asynchronously"),
        "400": identifyError("Bad Request: the reason is in the x-error-detail header"),
        "401": identifyError("Missing or invalid credential, or credentials that disagree"),
        "404": identifyError("Unknown path or method"),
        "413": identifyError("Body larger than 256 KiB"),
        "500": identifyError("The update could not be queued; nothing was accepted"),
        "503": identifyError(
          "Busy (bodies in flight, Redis full or not keeping up, a flood of unknown tokens); see Retry-After",
        ),
      },
      identifyError("The project sent more than its rate limit"),
    ),
    ...curl(
      "curl -X POST 'http://localhost:3000/api/v2/users/track?auth_token=AUTH_TOKEN' -H 'Content-Type: application/json' " +
        `-d '${JSON.stringify(identifyExample)}'`,
    ),
  };
}

/** The OpenAPI 3.1 document of every operation, served at /api/v2/openapi.json. */
export const openApiDocument = {
  openapi: "3.1.0",
  info: {
    title: "Profile, Topic and Journey API",
    version: "2.0.0",
    description: "Identify profiles, update preference-center topics, read journeys and their message metadata.",
  },
  servers: [{ url: "/api/v2" }],
  components: {
    schemas: schemas.components.schemas,
    securitySchemes: {
      authToken: {
        type: "apiKey",
        in: "query",
        name: "auth_token",
        description: "The project's identify auth token (or a body field of that name)",
      },
      trackingApiKey: {
        type: "apiKey",
        in: "query",
        name: "tracking_api_key",
        description: "Vero's newer name for the identify auth token (or a body field of that name)",
      },
      apiKey: {
        type: "apiKey",
        in: "header",
        name: "Authorization",
        description: "An API key, raw or as `Bearer <key>`",
      },
    },
  },
  paths: {
    "/users/track": { post: identifyOperation("identifyUser") },
    "/users/track.json": { post: identifyOperation("identifyUserJsonPath") },
    "/users/{id}": {
      get: {
        operationId: "getProfile",
        summary: "Read a profile as the workers have applied it (permission profile:read)",
        security: [{ apiKey: [] }],
        parameters: [
          { ...pathId("The profile's id, or its email for a profile known only by email"), schema: { type: "string" } },
          revisionHeader,
        ],
        responses: revisioned(
          limited(
            { "200": json(profile, "The profile"), ...keyFailures, "404": error("No such profile") },
            rateLimited,
          ),
        ),
        ...curl("curl http://localhost:3000/api/v2/users/user-1 -H 'Authorization: Bearer API_KEY'"),
      },
    },
    "/topics": {
      get: {
        operationId: "listTopics",
        summary: "List topics, cursor-paginated (permission campaign:read)",
        security: [{ apiKey: [] }],
        parameters: [
          {
            name: "limit",
            in: "query",
            required: false,
            schema: { type: "integer", minimum: 1, maximum: 100, default: 25 },
          },
          { name: "cursor", in: "query", required: false, schema: { type: "string" } },
          revisionHeader,
        ],
        responses: revisioned(
          limited(
            { "200": json(topicPage, "A page of topics"), ...keyFailures, "422": problems("Bad limit or cursor") },
            rateLimited,
          ),
        ),
        ...curl("curl 'http://localhost:3000/api/v2/topics?limit=25' -H 'Authorization: Bearer API_KEY'"),
      },
      post: {
        operationId: "createTopic",
        summary: "Create a topic (permission campaign:write)",
        security: [{ apiKey: [] }],
        parameters: [revisionHeader],
        requestBody: { required: true, content: { "application/json": { schema: newTopicBody } } },
        responses: revisioned(
          limited(
            {
              "201": json(topic, "The new topic"),
              ...keyFailures,
              "409": problems("Another topic of the project has this name, ignoring case"),
              "422": problems("The body breaks a rule"),
            },
            rateLimited,
          ),
        ),
        ...curl(
          `curl -X POST http://localhost:3000/api/v2/topics -H 'Authorization: Bearer API_KEY' -H 'Content-Type: application/json' -d '{"name":"Newsletter","default_status":"subscribed"}'`,
        ),
      },
    },
    "/topics/{id}": {
      patch: {
        operationId: "updateTopic",
        summary: "Update a topic (permission campaign:write)",
        security: [{ apiKey: [] }],
        parameters: [pathId("The topic id"), revisionHeader],
        requestBody: { required: true, content: { "application/json": { schema: topicPatch } } },
        responses: revisioned(
          limited(
            {
              "200": json(topic, "The updated topic"),
              ...keyFailures,
              "404": error("Unknown topic, or a topic of another project"),
              "409": problems("Another topic of the project has this name, ignoring case"),
              "422": problems("Empty patch, unknown property, wrong type or length"),
            },
            rateLimited,
          ),
        ),
        ...curl(
          `curl -X PATCH http://localhost:3000/api/v2/topics/TOPIC_ID -H 'Authorization: Bearer API_KEY' -H 'Content-Type: application/json' -d '{"default_status":"unsubscribed"}'`,
        ),
      },
    },
    "/journeys/{id}": {
      get: {
        operationId: "getJourney",
        summary: "Get a journey with its full graph (permission campaign:read)",
        security: [{ apiKey: [] }],
        parameters: [pathId("The journey id"), revisionHeader],
        responses: revisioned(
          limited(
            { "200": json(journey, "The journey"), ...keyFailures, "404": error("Unknown journey") },
            rateLimited,
          ),
        ),
        ...curl(
          "curl http://localhost:3000/api/v2/journeys/JOURNEY_ID -H 'Authorization: Bearer API_KEY' -H 'revision: 2023-01-01'",
        ),
      },
    },
    "/journeys/{id}/messages": {
      get: {
        operationId: "listJourneyMessages",
        summary: "List the messages of a journey, by node id (permission campaign:read)",
        security: [{ apiKey: [] }],
        parameters: [pathId("The journey id"), revisionHeader],
        responses: revisioned(
          limited(
            {
              "200": json({ type: "array", items: message }, "One message per message node"),
              ...keyFailures,
              "404": error("Unknown journey"),
            },
            rateLimited,
          ),
        ),
        ...curl("curl http://localhost:3000/api/v2/journeys/JOURNEY_ID/messages -H 'Authorization: Bearer API_KEY'"),
      },
    },
  },
} as const;
