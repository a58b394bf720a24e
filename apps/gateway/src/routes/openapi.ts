import type Router from "@koa/router";
import type Koa from "koa";
import { DOCS_CONTENT_SECURITY_POLICY } from "../middleware/security-headers";
import { openApiDocument } from "../openapi/document";
import { referenceAssets, referencePage } from "../openapi/reference-page";
import type { ApiState } from "../state";

const documentJson = JSON.stringify(openApiDocument);

/** The API describes itself: the OpenAPI document at /api/v2 and /api/v2/openapi.json, its reference page at /docs. */
export function openApiRoutes(root: Router, api: Router<ApiState>): void {
  const serveDocument: Koa.Middleware = (ctx) => {
    ctx.type = "json";
    ctx.body = documentJson;
  };
  api.get("/", serveDocument);
  api.get("/openapi.json", serveDocument);
  root.get("/docs", (ctx) => {
    ctx.set("Content-Security-Policy", DOCS_CONTENT_SECURITY_POLICY);
    ctx.type = "html";
    ctx.body = referencePage;
  });
  root.get("/docs/assets/:file", (ctx) => {
    const asset = Object.hasOwn(referenceAssets, ctx.params.file as string)
      ? referenceAssets[ctx.params.file as string]
      : undefined;
    if (asset === undefined) return;
    ctx.type = asset.type;
    ctx.set("cache-control", "public, max-age=3600");
    ctx.body = asset.body;
  });
}
