import Router from "@koa/router";
import Koa from "koa";
import type { GatewayDeps } from "./deps";
import { ApiError } from "./errors/api-error";
import { apiErrors } from "./errors/api-errors";
import { identifyErrors } from "./errors/identify-errors";
import { trackingSpecErrors } from "./errors/tracking-spec-errors";
import { requestLog } from "./middleware/request-log";
import { normalizeContentEncoding } from "./middleware/content-encoding";
import { nameRevision } from "./middleware/revision";
import { securityHeaders } from "./middleware/security-headers";
import { drainUnreadBody } from "./middleware/unread-body";
import { adminQueues } from "./routes/admin-queues";
import { batchRoutes } from "./routes/batch";
import { changeRoutes } from "./routes/changes";
import { eventRoutes } from "./routes/events";
import { healthRoutes } from "./routes/health";
import { identifyRoutes } from "./routes/identify";
import { intakeLogRoutes } from "./routes/intake-log";
import { journeyRoutes } from "./routes/journeys";
import { keyRoutes } from "./routes/keys";
import { openApiRoutes } from "./routes/openapi";
import { profileRoutes } from "./routes/profiles";
import { topicRoutes } from "./routes/topics";
import { trackingSpecRoutes } from "./routes/tracking-spec";
import { userRoutes } from "./routes/users";
import { webhookRoutes } from "./routes/webhooks";
import type { ApiState, IdentifyState } from "./state";

export const API_PREFIX = "/api/v2";

const unknownResource = () => {
  throw ApiError.notFound();
};

export function createApp(deps: GatewayDeps): Koa {
  const app = new Koa({ proxy: true });
  app.silent = true;

  // Vero's users API answers `{status, message}`, errors included. Identify and track, the
  // busiest paths, have a router of their own, matched first, so that their requests are not
  // matched against every other route; the other profile operations and the batch have the next one.
  const busiest = new Router<IdentifyState>({ prefix: API_PREFIX });
  busiest.use(identifyErrors(deps.logger));
  identifyRoutes(busiest, deps);
  eventRoutes(busiest, deps);

  const profiles = new Router<IdentifyState>({ prefix: API_PREFIX });
  profiles.use(identifyErrors(deps.logger));
  profileRoutes(profiles, deps);
  batchRoutes(profiles, deps);

  // The tracking spec's /v1 API, for Segment's and RudderStack's SDKs: at the root, where they
  // send it; errors as `{success: false, message}`.
  const trackingSpec = new Router<IdentifyState>();
  trackingSpec.use(trackingSpecErrors(deps.logger));
  trackingSpecRoutes(trackingSpec, deps);

  // Our key-authenticated API answers errors as `{error}` or `{errors:[…]}`.
  const api = new Router<ApiState>({ prefix: API_PREFIX });
  api.use(apiErrors(deps.logger));
  api.use(nameRevision);
  userRoutes(api, deps);
  journeyRoutes(api, deps);
  topicRoutes(api, deps);
  changeRoutes(api, deps);
  keyRoutes(api, deps);
  webhookRoutes(api, deps);
  intakeLogRoutes(api, deps);

  // Any other path under /api/v2 is Vero's, whose 404 is its own (a Magento module reads
  // `message` from every answer). Matched after the API router, whose profile read is
  // GET /users/:id, and the root router, which serves /api/v2/openapi.json.
  const veroFallback = new Router<IdentifyState>({ prefix: API_PREFIX });
  veroFallback.use(identifyErrors(deps.logger));
  veroFallback.all("{/*path}", unknownResource);

  const root = new Router();
  healthRoutes(root, deps);
  openApiRoutes(root, api);

  app.use(drainUnreadBody);
  app.use(normalizeContentEncoding);
  app.use(securityHeaders);
  app.use(requestLog(deps.logger, deps.metrics));
  // Whatever no router claims, and the dashboard's failures, answer in the API's style.
  app.use(apiErrors(deps.logger));
  // API routers first: their routes answer without calling on, so API requests skip the
  // dashboard's path check and the root router's paths. The profile operations come before
  // the API router, whose profile read (GET /users/:id) would take GET /users/edit.
  app.use(busiest.routes());
  app.use(profiles.routes());
  app.use(trackingSpec.routes());
  app.use(api.routes());
  app.use(adminQueues(deps));
  app.use(root.routes());
  app.use(veroFallback.routes());
  app.use(unknownResource);
  return app;
}
