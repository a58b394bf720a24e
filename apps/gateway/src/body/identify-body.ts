import { bodyParser } from "@koa/bodyparser";
import { MAX_BODY_BYTES } from "@cm/domain";
import type Koa from "koa";
import { repeatedBodyCredentials } from "../auth/repeated-credentials";
import { ApiError } from "../errors/api-error";
import { FormBodyError, parseFormBody } from "./form";

const FORM = "application/x-www-form-urlencoded";

/**
 * A form is read as text and parsed by ./form; anything else as JSON, whatever its content type
 * says (integrations do not always label it). Both stop at 256 KiB: more is 413.
 */
const readRawBody = bodyParser({
  // vero-python 2.x deletes a user with DELETE and a JSON body.
  parsedMethods: ["POST", "PUT", "DELETE"],
  enableTypes: ["json", "text"],
  extendTypes: { text: [FORM] },
  detectJSON: (ctx) => !ctx.request.is(FORM),
  jsonLimit: MAX_BODY_BYTES,
  textLimit: MAX_BODY_BYTES,
  jsonStrict: false,
});

/**
 * JSON sent with a form content type (`curl -d` without `-H`, PHP's curl with a string body)
 * was read as JSON before forms were read as forms, and still is: no form starts with "{".
 */
function formOrJson(text: string): { value: unknown; form: boolean } {
  if (text.trimStart().startsWith("{")) {
    try {
      return { value: JSON.parse(text) as unknown, form: false };
    } catch {
      // Not JSON after all: read as the form it says it is.
    }
  }
  return { value: parseFormBody(text), form: true };
}

/**
 * The body, its size in bytes and the values of credential fields it named more than once, or
 * why it could not be read.
 */
export type IdentifyBodyRead =
  { ok: true; value: unknown; bytes: number; repeatedCredentials: unknown[] } | { ok: false; error: unknown };

/** A body still arriving after `ms` is cut off: 408, and the connection closed. */
function deadline(ctx: Koa.Context, ms: number): { expired: Promise<never>; clear(): void } {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      ctx.set("Connection", "close");
      reject(new ApiError(408, { detail: `the body did not arrive within ${ms} ms` }));
    }, ms);
  });
  return { expired, clear: () => clearTimeout(timer) };
}

export async function readIdentifyBody(ctx: Koa.Context, timeoutMs: number): Promise<IdentifyBodyRead> {
  const slow = deadline(ctx, timeoutMs);
  const reading = readRawBody(ctx, async () => {});
  // Cut off, the read fails later, when the connection closes: nobody waits for it then.
  reading.catch(() => {});
  try {
    await Promise.race([reading, slow.expired]);
    const raw = ctx.request.rawBody ?? "";
    const bytes = Buffer.byteLength(raw);
    if (typeof ctx.request.body !== "string" || !ctx.request.is(FORM))
      return { ok: true, value: ctx.request.body, bytes, repeatedCredentials: repeatedBodyCredentials(raw, false) };
    const { value, form } = formOrJson(ctx.request.body);
    return { ok: true, value, bytes, repeatedCredentials: repeatedBodyCredentials(raw, form) };
  } catch (error) {
    return { ok: false, error: error instanceof FormBodyError ? ApiError.badRequest(error.message) : error };
  } finally {
    slow.clear();
  }
}
