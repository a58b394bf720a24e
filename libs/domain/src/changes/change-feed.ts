import type { Parsed, Problem } from "../kernel/problems";
import { queryReader, type QueryValues } from "../kernel/query-values";

// The change feed's read (docs/changes.md): what `GET /api/v2/changes` takes, and its cursors.

/** Every type of change the feed carries, as it names them. */
export const CHANGE_TYPES = [
  "profile.created",
  "profile.changed",
  "tags.changed",
  "unsubscribed",
  "resubscribed",
  "topic.choice_changed",
  "user.reidentified",
  "user.erased",
  "event.stored",
] as const;
export type ChangeType = (typeof CHANGE_TYPES)[number];

export const CHANGE_PAGE_DEFAULT = 100;
export const CHANGE_PAGE_MAX = 1000;
/** The longest a reader may ask to wait for a change (`wait`, seconds). */
export const CHANGE_WAIT_MAX_S = 30;

/** A read of the feed: the changes after the position `after` names (from the first kept when null). */
export interface ChangeFeedRead {
  /** A cursor of the feed (`next`, or a change's `position`), as the reader got it. */
  after: string | null;
  limit: number;
  /** Only changes of these types; every type when null. */
  types: readonly ChangeType[] | null;
}

export interface ChangeFeedRequest extends ChangeFeedRead {
  /** Seconds to wait for a change when there is none after `after` (0: answer at once). */
  waitS: number;
}

/** Where a change is in its project's feed: its transaction (xid8) and its number, as decimal text. */
export interface ChangePosition {
  xid: string;
  seq: string;
}

const XID_MAX = 2n ** 64n - 1n;
const SEQ_MAX = 2n ** 63n - 1n;

/** Opaque to readers, so that what a position is may change; it names its project, so that no other project reads it. */
export function changeCursor(projectId: number, position: ChangePosition): string {
  return Buffer.from(`changes:${projectId}:${position.xid}:${position.seq}`).toString("base64url");
}

/** The position a cursor of the project's feed names, or null for text that is no such cursor. */
export function changePositionOf(projectId: number, cursor: string): ChangePosition | null {
  const match = /^changes:([0-9]{1,10}):([0-9]{1,20}):([0-9]{1,19})$/.exec(
    Buffer.from(cursor, "base64url").toString("utf8"),
  );
  if (match === null || Number(match[1]) !== projectId) return null;
  const position = { xid: match[2] as string, seq: match[3] as string };
  if (BigInt(position.xid) > XID_MAX || BigInt(position.seq) > SEQ_MAX) return null;
  // One text per position: a cursor written another way (leading zeros, base64 padding) is none of ours.
  return changeCursor(projectId, position) === cursor ? position : null;
}

/** Whether position `a` comes before `b`. */
export function positionBefore(a: ChangePosition, b: ChangePosition): boolean {
  const [ax, bx] = [BigInt(a.xid), BigInt(b.xid)];
  return ax < bx || (ax === bx && BigInt(a.seq) < BigInt(b.seq));
}

/** The later of two positions. */
export const laterPosition = (a: ChangePosition, b: ChangePosition): ChangePosition => (positionBefore(a, b) ? b : a);

/**
 * Reads `after`, `limit`, `types` (comma-separated) and `wait` from a query string. The cursor
 * is read as text here: only the use case knows whether it is of the reader's project.
 */
export function changeFeedRequest(query: QueryValues): Parsed<ChangeFeedRequest> {
  const problems: Problem[] = [];
  const { text, limit } = queryReader(query, problems);
  const request: ChangeFeedRequest = {
    after: text("after"),
    limit: limit(CHANGE_PAGE_DEFAULT, CHANGE_PAGE_MAX),
    types: null,
    waitS: 0,
  };
  const types = text("types");
  if (types !== null) {
    const named = types.split(",").map((type) => type.trim());
    const unknown = named.filter((type) => !(CHANGE_TYPES as readonly string[]).includes(type));
    if (unknown.length > 0 || named.length === 0) {
      problems.push({
        path: "query.types",
        message: `types must be a comma-separated list of ${CHANGE_TYPES.join(", ")}; unknown: ${unknown.map((t) => JSON.stringify(t)).join(", ")}`,
      });
    } else request.types = [...new Set(named as ChangeType[])];
  }
  const wait = text("wait");
  if (wait !== null) {
    if (/^[0-9]{1,2}$/.test(wait) && Number(wait) <= CHANGE_WAIT_MAX_S) request.waitS = Number(wait);
    else
      problems.push({
        path: "query.wait",
        message: `wait must be an integer from 0 to ${CHANGE_WAIT_MAX_S} (seconds)`,
      });
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value: request };
}
