import { request } from "node:http";

/** One request exactly as a real client sends it, and what it must leave in the profile. */
export interface ReplayedRequest {
  client: string;
  name: string;
  /** Where it was taken from: repository, file and version, or documentation page. */
  source: string;
  method: string;
  /** Path and query as sent; {{AUTH_TOKEN}} where the client puts the credential. */
  path: string;
  headers: Record<string, string>;
  body: string | null;
  /** The id (or, for a user known by email only, the email) to read the profile by. */
  profile: string;
  expect: { email?: string; phone_number?: string; data?: Record<string, unknown>; channels?: unknown[] };
}

const PLACEHOLDER = /\{\{AUTH_TOKEN\}\}/g;

/** What is sent: the request line, headers and body, as the client writes them. */
export type SentRequest = Pick<ReplayedRequest, "method" | "path" | "headers" | "body">;

/** Puts a real credential where the client puts one, encoded as the client would encode it. */
function withCredential(replayed: SentRequest, token: string) {
  const isForm = Object.entries(replayed.headers).some(
    ([name, value]) => name.toLowerCase() === "content-type" && value.includes("x-www-form-urlencoded"),
  );
  const path = replayed.path.replace(PLACEHOLDER, encodeURIComponent(token));
  const body = replayed.body?.replace(PLACEHOLDER, isForm ? encodeURIComponent(token) : token) ?? null;
  return { path, body };
}

/**
 * Sends it with node:http, so that no header is added beyond the client's own, Host and
 * Content-Length (fetch would add a content type to a body sent without one).
 */
export function replay(
  baseUrl: string,
  replayed: SentRequest,
  token: string,
): Promise<{ status: number; body: unknown }> {
  const { path, body } = withCredential(replayed, token);
  const url = new URL(baseUrl);
  const headers =
    body === null ? replayed.headers : { ...replayed.headers, "Content-Length": String(Buffer.byteLength(body)) };
  return new Promise((resolve, reject) => {
    const sent = request({ host: url.hostname, port: url.port, method: replayed.method, path, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () =>
        resolve({ status: response.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) }),
      );
      response.on("error", reject);
    });
    sent.on("error", reject);
    sent.end(body ?? undefined);
  });
}
