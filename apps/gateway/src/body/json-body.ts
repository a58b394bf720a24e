import { bodyParser } from "@koa/bodyparser";
import { MAX_BODY_BYTES } from "@cm/domain";
import type Koa from "koa";

/** What @hapi/bourne, co-body's JSON parser, throws for a body with a `__proto__` key. */
const PROTO_KEY_REFUSED = "Object contains forbidden prototype property";

/**
 * The bodyparser's `onError`: a body co-body refused only for a `__proto__` key is read as
 * JSON.parse reads it, with `__proto__` an own key like any other (as a form or an NDJSON line
 * has it): every reader after us keeps data keys in maps without a prototype (libs/domain
 * fieldMap), so the key is data, never a prototype. Any other error stands.
 */
export function keepProtoKeys(error: Error, ctx: Koa.Context): void {
  const raw = (error as { body?: unknown }).body;
  if (!(error instanceof SyntaxError) || error.message !== PROTO_KEY_REFUSED || typeof raw !== "string") throw error;
  ctx.request.body = JSON.parse(raw);
  ctx.request.rawBody = raw;
}

/**
 * Reads the body as JSON whatever its content type (integrations do not always label it), up
 * to 256 KiB: more is 413, text that is not JSON is 400 (middleware/errors.ts words both).
 */
export const readJsonBody = bodyParser({
  enableTypes: ["json"],
  detectJSON: () => true,
  jsonLimit: MAX_BODY_BYTES,
  jsonStrict: false,
  onError: keepProtoKeys,
});
