import { openApiDocument } from "./document";

const escape = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string);

interface Operation {
  operationId: string;
  summary: string;
  parameters?: readonly { name: string; in: string; required: boolean; description?: string }[];
  requestBody?: { content: { "application/json": { schema: { $ref?: string } } } };
  responses: Record<string, { description: string }>;
}

function operationSection(path: string, method: string, operation: Operation): string {
  const parameters = (operation.parameters ?? [])
    .map((p) => `<li><code>${escape(p.name)}</code> (${p.in}${p.required ? ", required" : ""})${p.description ? `: ${escape(p.description)}` : ""}</li>`)
    .join("");
  const body = operation.requestBody?.content["application/json"].schema.$ref?.split("/").pop();
  const responses = Object.entries(operation.responses)
    .map(([status, response]) => `<tr><td>${status}</td><td>${escape(response.description)}</td></tr>`)
    .join("");
  return `<section class="operation" id="${operation.operationId}">
  <h2><span class="method">${method.toUpperCase()}</span> <code>/api/v2${escape(path)}</code></h2>
  <p>${escape(operation.summary)}</p>
  ${parameters ? `<h3>Parameters</h3><ul>${parameters}</ul>` : ""}
  ${body ? `<h3>Body</h3><p>JSON, schema <code>${escape(body)}</code> in <a href="/api/v2/openapi.json">openapi.json</a></p>` : ""}
  <h3>Responses</h3><table><tbody>${responses}</tbody></table>
</section>`;
}

/** A reference page for people, rendered once from the OpenAPI document. */
export const docsPage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escape(openApiDocument.info.title)} ${openApiDocument.info.version}</title>
<style>
body { font: 15px/1.5 system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #1d2330; }
.operation { border-top: 1px solid #d8dce6; padding: 0.5rem 0 1rem; }
.method { display: inline-block; min-width: 4.5rem; font-size: 0.8em; padding: 0.1rem 0.4rem; border-radius: 4px; background: #1d4ed8; color: white; text-align: center; }
td { padding: 0.1rem 0.8rem 0.1rem 0; vertical-align: top; }
code { background: #f1f3f7; padding: 0 0.2rem; border-radius: 3px; }
</style>
</head>
<body>
<h1>${escape(openApiDocument.info.title)} <small>${openApiDocument.info.version}</small></h1>
<p>${escape(openApiDocument.info.description)} Machine-readable: <a href="/api/v2/openapi.json">/api/v2/openapi.json</a>.</p>
${Object.entries(openApiDocument.paths)
  .flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => operationSection(path, method, operation as Operation)))
  .join("\n")}
</body>
</html>`;
