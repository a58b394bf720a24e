import Router from "@koa/router";
import Koa from "koa";
import type { GatewayDeps } from "./deps";
import { errorMiddleware } from "./middleware/errors";
import { requestLog } from "./middleware/request-log";
import { nameRevision } from "./middleware/revision";
import { adminQueues } from "./routes/admin-queues";
import { healthRoutes } from "./routes/health";
import { identifyRoutes } from "./routes/identify";
import { journeyRoutes } from "./routes/journeys";
import { openApiRoutes } from "./routes/openapi";
import { topicRoutes } from "./routes/topics";
import { userRoutes } from "./routes/users";

export const API_PREFIX = "/api/v2";

export function createApp(deps: GatewayDeps): Koa {
  const app = new Koa({ proxy: true });
  app.silent = true;

  const root = new Router();
  healthRoutes(root, deps);

  // The busiest path has a router of its own, matched first, so that identify requests are
  // not matched against every other route.
  const identify = new Router({ prefix: API_PREFIX });
  identifyRoutes(identify, deps);

  const api = new Router({ prefix: API_PREFIX });
  api.use(nameRevision);
  userRoutes(api, deps);
  journeyRoutes(api, deps);
  topicRoutes(api, deps);
  openApiRoutes(root, api);

  app.use(requestLog(deps.logger, deps.metrics));
  app.use(errorMiddleware(deps.logger));
  // API routers first: their routes answer without calling on, so API requests skip the
  // dashboard's path check and the root router's paths.
  app.use(identify.routes());
  app.use(api.routes());
  app.use(adminQueues(deps));
  app.use(root.routes());
  return app;
}
