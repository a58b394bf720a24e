import Router from "@koa/router";
import Koa from "koa";
import type { GatewayDeps } from "./deps";
import { errorMiddleware } from "./middleware/errors";
import { requestLog } from "./middleware/request-log";
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

  const api = new Router({ prefix: API_PREFIX });
  identifyRoutes(api, deps);
  userRoutes(api, deps);
  journeyRoutes(api, deps);
  topicRoutes(api, deps);
  openApiRoutes(root, api);

  app.use(requestLog(deps.logger, deps.metrics));
  app.use(errorMiddleware(deps.logger));
  app.use(adminQueues(deps));
  // The API router first: its routes answer without calling on, so API requests (identify
  // above all) skip matching the root router's paths.
  app.use(api.routes());
  app.use(root.routes());
  return app;
}
