import { ROUTES, schemas, type Route } from "../routes/table";

/** The reference page's first section (/docs shows the document's description first). */
const DESCRIPTION = `Identify and manage profiles, track events, update preference-center topics, read journeys and their message metadata.

## Where each credential comes from

Every project has **identify tokens** (\`cmt_…\`) and **API keys** (\`cmk_…\`), issued by the admin command line:
\`npm run --silent ctl -- project create --name NAME\` prints one of each, \`key create\` and \`token create\` issue more,
\`key list\`, \`key revoke\` and \`key rotate\` (and the same for \`token\`) manage them. \`npm start\` prints the demo
project's pair, ready to paste.

- **Identify token**: Vero's users API and event tracking (identify, edit, tags, unsubscribe, resubscribe, reidentify,
  delete, track). Give it as \`auth_token\` or \`tracking_api_key\`, in the query string or as a top-level body field.
- **API key**: profile, event, topic and journey reads and topic changes, by its permissions (\`profile:read\`,
  \`campaign:read\`, \`campaign:write\`). Give it as \`Authorization: Bearer <key>\` (or the bare key).
- **ADMIN_TOKEN**: the queue dashboard at \`/admin/queues\`, from the gateway's environment; not an API credential.

To try a call below, choose *Authorize*, give the credential, then *Try it out* on the operation.`;

/** The parts of the API, in the order the reference page lists them. */
const TAGS = [
  { name: "Profiles", description: "Vero's users API (identify token) and the profile reads (API key)" },
  { name: "Events", description: "Event tracking (identify token) and a user's events (API key)" },
  { name: "Batch", description: "Many users-API operations in one request" },
  { name: "Service", description: "The gateway itself" },
  { name: "Topics", description: "The topics of a preference center" },
  { name: "Journeys", description: "Automated message flows and their message metadata" },
];

/** The part of the API a path names, under which the reference page lists its operations. */
const tagOf = (path: string) =>
  path.startsWith("/events") || path.endsWith("/events")
    ? "Events"
    : path.startsWith("/batch")
      ? "Batch"
      : path.startsWith("/users")
        ? "Profiles"
        : path.startsWith("/topics")
          ? "Topics"
          : path.startsWith("/journeys")
            ? "Journeys"
            : "Service";

/** How each credential of a route is given (`components.securitySchemes`); an identify token may also be in the body. */
const SECURITY: Record<Route["credential"], object[] | undefined> = {
  identifyToken: [{ authToken: [] }, { trackingApiKey: [] }, {}],
  apiKey: [{ apiKey: [] }],
  none: undefined,
};

/**
 * The document's paths, from the routes: each operation under its tag, naming its aliases
 * (`x-aliases`), and each alias as an operation of its own that names what it is an alias of
 * (`x-alias-of`), so that a client generated from the document can call it, while /docs shows
 * it beside its operation.
 */
function openApiPaths(routes: Route[]) {
  const paths: Record<string, Record<string, object>> = {};
  for (const { method, path, credential, operation, aliases } of routes) {
    const security = SECURITY[credential] === undefined ? {} : { security: SECURITY[credential] };
    const add = (answers: { method: string; path: string }, entry: object) => {
      paths[answers.path] = {
        ...paths[answers.path],
        [answers.method]: { tags: [tagOf(path)], ...entry, ...security },
      };
    };
    const named = aliases.map((alias) => ({
      method: alias.method.toUpperCase(),
      path: alias.path,
      operationId: alias.operation.operationId,
    }));
    add({ method, path }, aliases.length === 0 ? operation : { ...operation, "x-aliases": named });
    for (const alias of aliases) add(alias, { ...alias.operation, "x-alias-of": operation.operationId });
  }
  return paths;
}

/** The OpenAPI 3.1 document of every operation, served at /api/v2/openapi.json. */
export const openApiDocument = {
  openapi: "3.1.0",
  info: {
    title: "Profile, Topic and Journey API",
    version: "2.0.0",
    description: DESCRIPTION,
    contact: { name: "The operators of this gateway" },
  },
  servers: [{ url: "/api/v2" }],
  tags: TAGS,
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
  paths: openApiPaths(Object.values(ROUTES)),
} as const;
