import type { Parsed, Problem } from "../kernel/problems";
import { queryReader, type QueryValues } from "../kernel/query-values";

// The intake log (docs/intake-log.md): what each door of the intake received of a project
// lately, accepted or refused, for setting up an integration; read by `GET /api/v2/intake-log`.

/**
 * Where a request came in: Vero's users API (its single operations but track), its event
 * tracking (track), its batch, the tracking spec's /v1 API, `ctl import`.
 */
export const INTAKE_DOORS = ["users", "events", "batch", "v1", "import"] as const;
export type IntakeDoor = (typeof INTAKE_DOORS)[number];

export const INTAKE_OUTCOMES = ["accepted", "refused"] as const;
export type IntakeOutcome = (typeof INTAKE_OUTCOMES)[number];

/** One entry as the log keeps it: what a door received and what it answered. */
export interface IntakeRecord {
  /** When the request arrived, ms since 1970. */
  at: number;
  door: IntakeDoor;
  /** The operation (identify, edit, …, a batch item's `type`, a /v1 message type), or the door's name when unknown. */
  operation: string;
  outcome: IntakeOutcome;
  /** The status answered: 200, or the refusal's (a batch's refused item: 400). */
  status: number;
  /** Why it was refused, as the answer says; null when accepted. */
  reason: string | null;
  /** The user the body names, when it names one as its operation reads it. */
  userId: string | null;
  /** The body as received, as text, cut to its first bytes (INTAKE_LOG_BODY_BYTES). */
  body: string;
  bodyTruncated: boolean;
}

export const INTAKE_PAGE_DEFAULT = 100;
export const INTAKE_PAGE_MAX = 1000;
/** The longest a reader may ask to wait for an entry (`wait`, seconds). */
export const INTAKE_WAIT_MAX_S = 30;

export interface IntakeLogFilter {
  door: IntakeDoor | null;
  outcome: IntakeOutcome | null;
  userId: string | null;
}

/** A read of the log: the entries after the cursor `after` (from the oldest kept when null) that pass the filter. */
export interface IntakeLogRead extends IntakeLogFilter {
  after: string | null;
  limit: number;
}

export interface IntakeLogRequest extends IntakeLogRead {
  /** Seconds to wait for an entry when there is none after `after` (0: answer at once). */
  waitS: number;
}

/** Whether `record` passes `filter`. */
export const passesIntakeFilter = (record: IntakeRecord, { door, outcome, userId }: IntakeLogFilter): boolean =>
  (door === null || record.door === door) &&
  (outcome === null || record.outcome === outcome) &&
  (userId === null || record.userId === userId);

/** A Redis stream entry's id: milliseconds and a sequence number. */
const STREAM_ID = /^(0|[1-9][0-9]{0,15})-(0|[1-9][0-9]{0,15})$/;

/** Opaque to readers, so that what a position is may change; it names its project, so that no other project reads it. */
export function intakeCursor(projectId: number, streamId: string): string {
  return Buffer.from(`intake:${projectId}:${streamId}`).toString("base64url");
}

/** The stream entry id a cursor of the project's log names, or null for text that is no such cursor. */
export function intakeStreamIdOf(projectId: number, cursor: string): string | null {
  const match = /^intake:([0-9]{1,10}):(.*)$/.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (match === null || Number(match[1]) !== projectId || !STREAM_ID.test(match[2] as string)) return null;
  const streamId = match[2] as string;
  // One text per position: a cursor written another way (base64 padding, other characters) is none of ours.
  return intakeCursor(projectId, streamId) === cursor ? streamId : null;
}

/** `text` cut to at most `maxBytes` of UTF-8, at a character's end. */
export function intakeBody(text: string, maxBytes: number): { body: string; bodyTruncated: boolean } {
  // Most bodies are far below the bound: a character is at most 3 bytes per UTF-16 unit.
  if (text.length * 3 <= maxBytes || Buffer.byteLength(text) <= maxBytes) return { body: text, bodyTruncated: false };
  const cut = Buffer.from(text).subarray(0, maxBytes).toString("utf8");
  // A character cut in two decodes as U+FFFD: leave it out.
  return { body: cut.endsWith("\uFFFD") ? cut.slice(0, -1) : cut, bodyTruncated: true };
}

const given = (value: unknown) => value !== undefined && value !== null && value !== "";
const idText = (value: unknown): string | null =>
  typeof value === "string" && value !== "" ? value : typeof value === "number" ? String(value) : null;

/**
 * The user a body names, as its operation reads it (userIdOf; a tracking-spec message's
 * `userId`, else `anonymousId`; a track's `identity`), or null: what the log is filtered and
 * erased by.
 */
export function intakeUserId(body: unknown): string | null {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return null;
  const fields = body as Record<string, unknown>;
  const identity = fields.identity;
  const named = typeof identity === "object" && identity !== null ? (identity as Record<string, unknown>) : fields;
  for (const field of ["id", "email", "userId", "anonymousId"]) {
    if (given(named[field])) return idText(named[field]);
  }
  return null;
}

/** Reads `after`, `limit`, `wait`, `door`, `outcome` and `user_id` from a query string. */
export function intakeLogRequest(query: QueryValues): Parsed<IntakeLogRequest> {
  const problems: Problem[] = [];
  const { text, limit } = queryReader(query, problems);
  const oneOf = <T extends string>(name: string, values: readonly T[]): T | null => {
    const value = text(name);
    if (value === null || (values as readonly string[]).includes(value)) return value as T | null;
    problems.push({ path: `query.${name}`, message: `${name} must be one of ${values.join(", ")}` });
    return null;
  };
  const request: IntakeLogRequest = {
    after: text("after"),
    limit: limit(INTAKE_PAGE_DEFAULT, INTAKE_PAGE_MAX),
    door: oneOf("door", INTAKE_DOORS),
    outcome: oneOf("outcome", INTAKE_OUTCOMES),
    userId: text("user_id"),
    waitS: 0,
  };
  const wait = text("wait");
  if (wait !== null) {
    if (/^[0-9]{1,2}$/.test(wait) && Number(wait) <= INTAKE_WAIT_MAX_S) request.waitS = Number(wait);
    else
      problems.push({
        path: "query.wait",
        message: `wait must be an integer from 0 to ${INTAKE_WAIT_MAX_S} (seconds)`,
      });
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value: request };
}
