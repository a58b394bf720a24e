import type Router from "@koa/router";
import type Koa from "koa";
import { docsPage } from "../openapi/docs-page";
import { openApiDocument } from "../openapi/document";
import type { ApiState } from "../state";

const documentJson = JSON.stringify(openApiDocument);

/** The API describes itself: the OpenAPI document at /api/v2 and /api/v2/openapi.json, a page at /docs. */
export function openApiRoutes(root: Router, api: Router<ApiState>): void {
  const serveDocument: Koa.Middleware = (ctx) => {
    ctx.type = "json";
    ctx.body = documentJson;
  };
  api.get("/", serveDocument);
  api.get("/openapi.json", serveDocument);
  root.get("/docs", (ctx) => {
    ctx.type = "html";
    ctx.body = docsPage;
  });
}
