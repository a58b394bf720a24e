import { bodyParser } from "@koa/bodyparser";
import { batchFromLines, MAX_BATCH_BODY_BYTES, MAX_BODY_BYTES } from "@cm/domain";
import type Koa from "koa";
import { repeatedBodyCredentials } from "../auth/repeated-credentials";
import { ApiError } from "../errors/api-error";
import { FormBodyError, parseFormBody } from "./form";
import { keepProtoKeys } from "./json-body";

const FORM = "application/x-www-form-urlencoded";
const NDJSON = ["application/x-ndjson", "application/jsonl"];

/** A body read as text: its value, and the credentials it names more than once (repeatedBodyCredentials). */
type TextBody = { value: unknown; repeatedCredentials: unknown[] };

/**
 * JSON sent with a form content type (`curl -d` without `-H`, PHP's curl with a string body)
 * was read as JSON before forms were read as forms, and still is: no form starts with "{".
 */
function formOrJson(text: string): TextBody {
  if (text.trimStart().startsWith("{")) {
    try {
      return { value: JSON.parse(text) as unknown, repeatedCredentials: repeatedBodyCredentials(text, false) };
    } catch {
      // Not JSON after all: read as the form it says it is.
    }
  }
  return { value: parseFormBody(text), repeatedCredentials: repeatedBodyCredentials(text, true) };
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

/** How a users-API operation reads its body: JSON, whatever the content type says, or as text for `textTypes`. */
export interface UsersApiBody {
  /** More, after decompression, is 413. */
  maxBytes: number;
  read(ctx: Koa.Context, timeoutMs: number): Promise<IdentifyBodyRead>;
}

const sizeText = (bytes: number) => (bytes % 2 ** 20 === 0 ? `${bytes / 2 ** 20} MiB` : `${bytes / 2 ** 10} KiB`);

function usersApiBody(maxBytes: number, textTypes: string[], fromText: (text: string) => TextBody): UsersApiBody {
  const readRawBody = bodyParser({
    // vero-python 2.x deletes a user with DELETE and a JSON body.
    parsedMethods: ["POST", "PUT", "DELETE"],
    enableTypes: ["json", "text"],
    extendTypes: { text: textTypes },
    detectJSON: (ctx) => !ctx.request.is(textTypes),
    jsonLimit: maxBytes,
    textLimit: maxBytes,
    jsonStrict: false,
    onError: keepProtoKeys,
  });
  const tooLarge = `body is larger than ${sizeText(maxBytes)}`;
  const read = async (ctx: Koa.Context, timeoutMs: number): Promise<IdentifyBodyRead> => {
    const slow = deadline(ctx, timeoutMs);
    const reading = readRawBody(ctx, async () => {});
    // Cut off, the read fails later, when the connection closes: nobody waits for it then.
    reading.catch(() => {});
    try {
      await Promise.race([reading, slow.expired]);
      const raw = ctx.request.rawBody ?? "";
      const bytes = Buffer.byteLength(raw);
      if (typeof ctx.request.body !== "string" || !ctx.request.is(textTypes))
        return { ok: true, value: ctx.request.body, bytes, repeatedCredentials: repeatedBodyCredentials(raw, false) };
      return { ok: true, bytes, ...fromText(ctx.request.body) };
    } catch (error) {
      if (error instanceof FormBodyError) return { ok: false, error: ApiError.badRequest(error.message) };
      const status = (error as { status?: unknown } | null)?.status;
      return { ok: false, error: status === 413 ? new ApiError(413, { detail: tooLarge }) : error };
    } finally {
      slow.clear();
    }
  };
  return { maxBytes, read };
}

/** A single operation's body: JSON, or a form (docs/integrations.md), of at most 256 KiB. */
export const OPERATION_BODY = usersApiBody(MAX_BODY_BYTES, [FORM], formOrJson);

/**
 * A batch: JSON, or NDJSON (one operation a line) when its content type says so; at most 5 MiB.
 * NDJSON is read as the JSON body `{batch: [...]}` is, with no room for a credential.
 */
export const BATCH_BODY = usersApiBody(MAX_BATCH_BODY_BYTES, NDJSON, (text) => ({
  value: batchFromLines(text),
  repeatedCredentials: [],
}));
