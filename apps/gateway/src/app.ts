import Router from "@koa/router";
import Koa from "koa";
import type { GatewayDeps } from "./deps";
import { errorMiddleware } from "./middleware/errors";
import { requestLog } from "./middleware/request-log";
import { healthRoutes } from "./routes/health";
import { identifyRoutes } from "./routes/identify";
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

  app.use(requestLog(deps.logger));
  app.use(errorMiddleware(deps.logger));
  app.use(root.routes());
  app.use(api.routes());
  return app;
}
