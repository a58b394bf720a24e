import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";

// The API reference at /docs: Swagger UI (swagger-ui-dist, from npm) rendering the OpenAPI
// document, every file served by the gateway itself, so that the page works with no access to
// a CDN. What it shows comes from the document: the credentials section from its description,
// a list of operations by tag, examples from the schemas, and a console to try each call.

const DIST = dirname(require.resolve("swagger-ui-dist/package.json"));

/** The page's files, read once: Swagger UI's bundle and style, and the call that starts it. */
export const referenceAssets: Record<string, { type: string; body: Buffer }> = {
  "swagger-ui.css": { type: "text/css", body: readFileSync(join(DIST, "swagger-ui.css")) },
  "swagger-ui-bundle.js": { type: "application/javascript", body: readFileSync(join(DIST, "swagger-ui-bundle.js")) },
  "reference.js": {
    type: "application/javascript",
    body: Buffer.from(`// An alias (a .json twin, another method) is shown beside its operation, not as one more.
function besideTheirOperations(document) {
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (operation["x-alias-of"] !== undefined) delete item[method];
      const aliases = operation["x-aliases"] ?? [];
      if (aliases.length === 0) continue;
      const named = aliases.map((alias) => "\`" + alias.method + " " + alias.path + "\` (" + alias.operationId + ")");
      operation.description = (operation.description ?? "") + "\\n\\nAlso answers as " + named.join(", ") + ".";
    }
    if (Object.keys(item).length === 0) delete document.paths[path];
  }
  return document;
}

fetch("/api/v2/openapi.json")
  .then((answer) => answer.json())
  .then((document) => {
    window.ui = SwaggerUIBundle({
      spec: besideTheirOperations(document),
      dom_id: "#reference",
      deepLinking: true,
      displayOperationId: true,
      displayRequestDuration: true,
      filter: true,
      docExpansion: "list",
      defaultModelsExpandDepth: 0,
      validatorUrl: null,
    });
  });
`),
  },
};

export const referencePage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Profile, Topic and Journey API reference</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<div id="reference"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/reference.js"></script>
</body>
</html>
`;
