import type { Readable, Transform } from "node:stream";
import { createBrotliDecompress, createUnzip } from "node:zlib";
import { batchFromLines, MAX_BATCH_BODY_BYTES, MAX_BODY_BYTES, MAX_JSON_DEPTH } from "@cm/domain";
import type Koa from "koa";
import getRawBody from "raw-body";
import { repeatedBodyCredentials } from "../auth/repeated-credentials";
import { ApiError } from "../errors/api-error";
import { BYTES_PER_PARSED_OBJECT, DECOMPRESSOR_BYTES, parsedObjectBytes, type BodyReservation } from "./body-budget";
import { FormBodyError, parseFormBody } from "./form";
import { scanJson } from "./json-scan";

const FORM = "application/x-www-form-urlencoded";
const NDJSON = ["application/x-ndjson", "application/jsonl"];

/** A body parsed, and the values of credential fields it named more than once (repeatedBodyCredentials). */
type ParsedBody = { ok: true; value: unknown; repeatedCredentials: unknown[] } | { ok: false; error: unknown };

/** What a body's text tells before it is parsed, and how to parse it. */
interface TextBody {
  /** What parsing it costs besides the text: its objects and arrays. */
  parsedBytes: number;
  /**
   * Every value the body gives a credential field, found without parsing it; null when only
   * parsing tells (a form).
   */
  credentials: unknown[] | null;
  parse(): ParsedBody;
}

/**
 * JSON as JSON.parse reads it: an empty body is the empty string, and a `__proto__` key is an own
 * key like any other (as in a form or an NDJSON line), which every reader after this keeps in maps
 * without a prototype (libs/domain fieldMap): data, never a prototype.
 */
function parseJson(text: string): unknown {
  try {
    return text === "" ? text : (JSON.parse(text) as unknown);
  } catch {
    throw ApiError.badRequest("body is not valid JSON");
  }
}

/**
 * A JSON body (or NDJSON, one a line), parsed by `parse`: its cost and its credential fields'
 * values are known from one pass over its text, and a body nested deeper than `maxDepth` is
 * refused unparsed (no operation may nest deeper than MAX_JSON_DEPTH).
 */
function jsonText(
  text: string,
  maxDepth: number,
  credentialFields: readonly string[],
  parse: (text: string) => unknown,
): TextBody {
  const scan = scanJson(text, credentialFields);
  if (scan.depth > maxDepth) {
    const error = ApiError.badRequest(`JSON must not nest deeper than ${MAX_JSON_DEPTH} levels`);
    return { parsedBytes: 0, credentials: scan.values, parse: () => ({ ok: false, error }) };
  }
  return {
    parsedBytes: scan.objects * BYTES_PER_PARSED_OBJECT,
    credentials: scan.values,
    parse: () => {
      try {
        return { ok: true, value: parse(text), repeatedCredentials: [] };
      } catch (error) {
        return { ok: false, error };
      }
    },
  };
}

/**
 * JSON sent with a form content type (`curl -d` without `-H`, PHP's curl with a string body)
 * was read as JSON before forms were read as forms, and still is: no form starts with "{".
 */
function formOrJson(text: string): ParsedBody {
  if (text.trimStart().startsWith("{")) {
    try {
      return {
        ok: true,
        value: JSON.parse(text) as unknown,
        repeatedCredentials: repeatedBodyCredentials(text, false),
      };
    } catch {
      // Not JSON after all: read as the form it says it is.
    }
  }
  try {
    return { ok: true, value: parseFormBody(text), repeatedCredentials: repeatedBodyCredentials(text, true) };
  } catch (error) {
    return { ok: false, error: error instanceof FormBodyError ? ApiError.badRequest(error.message) : error };
  }
}

/** How a body was read: as JSON, or as the text its content type names (a form, NDJSON). */
export type BodyReading = "json" | "text";

/** The body as read, how, or why it could not be. */
export type IdentifyBodyRead =
  ({ ok: true; text: string; bytes: number; readAs: BodyReading } & TextBody) | { ok: false; error: unknown };

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

const DECOMPRESSORS = new Map<string, () => Transform>([
  ["gzip", createUnzip],
  ["deflate", createUnzip],
  ["br", createBrotliDecompress],
]);

/**
 * The body as sent, decompressed as its Content-Encoding says (as co-body's `inflation` does:
 * another is 415). A decompressor holds its state whatever arrives: held in `reservation` first.
 */
function inflated(req: Koa.Context["req"], encoding: string, reservation: BodyReservation): Readable {
  if (encoding === "identity") return req;
  const decompressor = DECOMPRESSORS.get(encoding);
  if (decompressor === undefined) {
    throw Object.assign(new Error(`Unsupported Content-Encoding: ${encoding}`), { status: 415 });
  }
  reservation.take(DECOMPRESSOR_BYTES);
  return req.pipe(decompressor());
}

/**
 * The body's text, at most `maxBytes` inflated (more is 413, and a Content-Length announcing
 * more is 413 before a byte is read), each chunk held in `reservation` as it arrives.
 */
async function readText(ctx: Koa.Context, maxBytes: number, reservation: BodyReservation): Promise<string> {
  const encoding = ctx.get("content-encoding") || "identity";
  const length = ctx.get("content-length");
  const body = reservation.metered(inflated(ctx.req, encoding, reservation));
  // Where the client goes away, nobody waits for the rest; a compressed body would not end.
  const aborted = () => {
    if (!ctx.req.complete) body.destroy(new ApiError(400, { detail: "the request was aborted" }));
  };
  ctx.req.once("close", aborted);
  try {
    return await getRawBody(body, {
      limit: maxBytes,
      encoding: "utf-8",
      ...(length !== "" && encoding === "identity" ? { length: Number(length) } : {}),
    });
  } finally {
    ctx.req.off("close", aborted);
    body.destroy();
  }
}

/** How a users-API operation reads its body: JSON, whatever the content type says, or as `textTypes` say. */
export interface UsersApiBody {
  /**
   * `credentialFields`: the top-level fields of a JSON body that may hold the credential, found
   * before it is parsed. `reservation`: what holds the body's bytes as they arrive.
   */
  read(
    ctx: Koa.Context,
    timeoutMs: number,
    credentialFields: readonly string[],
    reservation: BodyReservation,
  ): Promise<IdentifyBodyRead>;
}

const sizeText = (bytes: number) => (bytes % 2 ** 20 === 0 ? `${bytes / 2 ** 20} MiB` : `${bytes / 2 ** 10} KiB`);

/**
 * Bodies are read as text (raw-body, as Koa's body parser does), and parsed only once what
 * parsing costs is held in the budget and the credential is checked: a 5 MiB body of nested
 * arrays parses into 160 MB of objects. `maxDepth`: the deepest nesting of its JSON. `asText`:
 * the content types read otherwise than as JSON (a form, NDJSON), and how.
 */
function usersApiBody(
  maxBytes: number,
  maxDepth: number,
  asText?: { types: string[]; read: (text: string) => TextBody },
): UsersApiBody {
  const tooLarge = `body is larger than ${sizeText(maxBytes)}`;
  const read = async (
    ctx: Koa.Context,
    timeoutMs: number,
    credentialFields: readonly string[],
    reservation: BodyReservation,
  ): Promise<IdentifyBodyRead> => {
    const slow = deadline(ctx, timeoutMs);
    const reading = readText(ctx, maxBytes, reservation);
    // Cut off, the read fails later, when the connection closes: nobody waits for it then.
    reading.catch(() => {});
    try {
      const text = await Promise.race([reading, slow.expired]);
      const readAs: BodyReading = asText !== undefined && ctx.request.is(asText.types) ? "text" : "json";
      const body =
        readAs === "text" && asText !== undefined
          ? asText.read(text)
          : jsonText(text, maxDepth, credentialFields, parseJson);
      return { ok: true, text, bytes: Buffer.byteLength(text), readAs, ...body };
    } catch (error) {
      const status = (error as { status?: unknown } | null)?.status;
      return { ok: false, error: status === 413 ? new ApiError(413, { detail: tooLarge }) : error };
    } finally {
      slow.clear();
    }
  };
  return { read };
}

/** A single operation's body: JSON, or a form (docs/integrations.md), of at most 256 KiB. */
export const OPERATION_BODY = usersApiBody(MAX_BODY_BYTES, MAX_JSON_DEPTH, {
  types: [FORM],
  read: (text) => ({ parsedBytes: parsedObjectBytes(text), credentials: null, parse: () => formOrJson(text) }),
});

/** A batch nests two levels more than its operations: the body's object and its list. */
const BATCH_DEPTH = MAX_JSON_DEPTH + 2;

/**
 * A batch: JSON, or NDJSON (one operation a line) when its content type says so; at most 5 MiB.
 * NDJSON is read as the JSON body `{batch: [...]}` is, with no room for a credential.
 */
export const BATCH_BODY = usersApiBody(MAX_BATCH_BODY_BYTES, BATCH_DEPTH, {
  types: NDJSON,
  read: (text) => jsonText(text, BATCH_DEPTH, [], batchFromLines),
});

/**
 * A message of the tracking spec's single calls (/v1/track, docs/tracking-spec.md): JSON whatever
 * the content type says (Segment's browser SDK sends text/plain, which needs no CORS preflight),
 * of at most 256 KiB, nested one level more than an operation for `context.traits`.
 */
export const SPEC_MESSAGE_BODY = usersApiBody(MAX_BODY_BYTES, MAX_JSON_DEPTH + 1);

/** A batch of the tracking spec (/v1/batch): JSON whatever the content type says, of at most 5 MiB. */
export const SPEC_BATCH_BODY = usersApiBody(MAX_BATCH_BODY_BYTES, BATCH_DEPTH + 1);
