import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "@cm/gateway";
import { openApiDocument } from "../../apps/gateway/src/openapi/document";
import { ROUTES } from "../../apps/gateway/src/routes/table";
import { createTestStack, type TestStack } from "../support/services";

/** What @koa/router's routes() middleware carries: its router, whose layers are the routes. */
interface RoutesMiddleware {
  router?: { stack: { path: string; methods: string[] }[] };
}

const PREFIX = "/api/v2";
/** The document itself: it is served beside the operations it lists, not listed among them. */
const THE_DOCUMENT = ["GET /api/v2", "GET /api/v2/openapi.json"];

let stack: TestStack;
let answered: string[];

beforeAll(async () => {
  stack = await createTestStack("routes_documented");
  const app = createApp((await stack.gateway()).deps);
  const layers = app.middleware.flatMap((middleware) => (middleware as RoutesMiddleware).router?.stack ?? []);
  // A preflight answers OPTIONS, and a path's catch-all (404, 405) every method: neither is an operation.
  answered = layers
    .filter((layer) => layer.path.startsWith(PREFIX) && layer.methods.length > 0 && !layer.methods.includes("OPTIONS"))
    .flatMap((layer) => layer.methods.filter((method) => method !== "HEAD").map((method) => `${method} ${layer.path}`));
});
afterAll(() => stack.close());

const documented = Object.entries(openApiDocument.paths).flatMap(([path, methods]) =>
  Object.keys(methods).map((method) => `${method.toUpperCase()} ${PREFIX}${path.replace(/\{(\w+)\}/g, ":$1")}`),
);

describe("the routes the gateway answers and the OpenAPI document", () => {
  it("has a reference entry for every route under /api/v2, and a route for every entry", () => {
    expect(answered.length).toBeGreaterThanOrEqual(20);
    expect([...answered].sort()).toEqual([...documented, ...THE_DOCUMENT].sort());
  });

  it("names each route of the table by its operationId", () => {
    for (const [name, route] of Object.entries(ROUTES)) expect(route.operation.operationId).toBe(name);
  });

  it("lists each alias (a `.json` twin, another method) as the alias of its operation", () => {
    const operations = Object.values(openApiDocument.paths).flatMap((methods) => Object.values(methods)) as {
      operationId: string;
      "x-alias-of"?: string;
      "x-aliases"?: { operationId: string }[];
    }[];
    const byId = new Map(operations.map((operation) => [operation.operationId, operation]));
    const aliases = operations.filter((operation) => operation["x-alias-of"] !== undefined);
    expect(aliases.map((alias) => alias.operationId)).toContain("reidentifyUserWithPostJsonPath");
    for (const alias of aliases) {
      const operation = byId.get(alias["x-alias-of"] as string);
      expect(operation?.["x-alias-of"], alias.operationId).toBeUndefined();
      expect(
        operation?.["x-aliases"]?.map((named) => named.operationId),
        alias.operationId,
      ).toContain(alias.operationId);
    }
    expect(
      operations.filter(
        (operation) => /JsonPath$|With[A-Z]/.test(operation.operationId) && !aliases.includes(operation),
      ),
    ).toEqual([]);
  });
});
