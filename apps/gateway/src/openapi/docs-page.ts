import { openApiDocument } from "./document";

const escape = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string,
  );

interface Operation {
  operationId: string;
  summary: string;
  description?: string;
  security?: readonly Record<string, readonly string[]>[];
  parameters?: readonly { name: string; in: string; required: boolean; description?: string }[];
  requestBody?: { content: Record<string, { schema: { $ref?: string }; example?: unknown }> };
  responses: Record<string, { description: string }>;
  "x-codeSamples"?: readonly { source: string }[];
}

const schemes = openApiDocument.components.securitySchemes as Record<
  string,
  { in: string; name: string; description: string }
>;

/** Every place the operation's credential may be given. */
function credentialItems(operation: Operation): string {
  return (operation.security ?? [])
    .map((requirement) => Object.keys(requirement)[0])
    .map((name) => {
      if (name === undefined) return "<li>in the body, as a top-level field (see the schema)</li>";
      const scheme = schemes[name] as { in: string; name: string; description: string };
      return `<li><code>${escape(scheme.name)}</code> (${scheme.in}): ${escape(scheme.description)}</li>`;
    })
    .join("");
}

function bodySection(operation: Operation): string {
  const content = Object.entries(operation.requestBody?.content ?? {});
  if (content.length === 0) return "";
  const items = content
    .map(([type, media]) => {
      const schema = media.schema.$ref?.split("/").pop() ?? "";
      const example =
        media.example === undefined
          ? ""
          : `<pre>${escape(typeof media.example === "string" ? media.example : JSON.stringify(media.example, null, 2))}</pre>`;
      return `<li><code>${escape(type)}</code>, schema <code>${escape(schema)}</code>${example}</li>`;
    })
    .join("");
  return `<h3>Body</h3><ul>${items}</ul><p>Schemas in <a href="/api/v2/openapi.json">openapi.json</a>.</p>`;
}

function operationSection(path: string, method: string, operation: Operation): string {
  const parameters = (operation.parameters ?? [])
    .map(
      (p) =>
        `<li><code>${escape(p.name)}</code> (${p.in}${p.required ? ", required" : ""})${p.description ? `: ${escape(p.description)}` : ""}</li>`,
    )
    .join("");
  const credentials = credentialItems(operation);
  const example = operation["x-codeSamples"]?.[0]?.source;
  const responses = Object.entries(operation.responses)
    .map(([status, response]) => `<tr><td>${status}</td><td>${escape(response.description)}</td></tr>`)
    .join("");
  return `<section class="operation" id="${operation.operationId}">
  <h2><span class="method">${method.toUpperCase()}</span> <code>/api/v2${escape(path)}</code></h2>
  <p>${escape(operation.summary)}</p>
  ${operation.description ? `<p>${escape(operation.description)}</p>` : ""}
  ${credentials ? `<h3>Credential</h3><ul>${credentials}</ul>` : ""}
  ${parameters ? `<h3>Parameters</h3><ul>${parameters}</ul>` : ""}
  ${bodySection(operation)}
  ${example ? `<h3>Example</h3><pre class="example">${escape(example)}</pre>` : ""}
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
pre { background: #f1f3f7; padding: 0.5rem; border-radius: 4px; overflow-x: auto; white-space: pre-wrap; }
</style>
</head>
<body>
<h1>${escape(openApiDocument.info.title)} <small>${openApiDocument.info.version}</small></h1>
<p>${escape(openApiDocument.info.description)} Machine-readable: <a href="/api/v2/openapi.json">/api/v2/openapi.json</a>.</p>
${Object.entries(openApiDocument.paths)
  .flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => operationSection(path, method, operation as Operation)),
  )
  .join("\n")}
</body>
</html>`;
