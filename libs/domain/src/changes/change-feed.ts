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

/**
 * Where a change is in its project's feed, each part as decimal text, compared in this order: on
 * Citus the feed's epoch, the clock (µs since 1970) and the Citus group of the node that stored
 * it; then its transaction (xid8) on that node and its number. On one Postgres the first three
 * are 0 (docs/changes.md, "Order"; docs/scaling.md, "The change feed on Citus"). These name a
 * stored row; a profile's write is stored as one row that makes several changes of the feed
 * (profileWriteChanges), and `index` numbers each but the last, from 0. A position without an
 * `index` is past every change of its row.
 */
export interface ChangePosition {
  epoch: string;
  t: string;
  node: string;
  xid: string;
  seq: string;
  index?: string;
}

/** The position before every change: where a reader without a cursor starts. */
export const FIRST_POSITION: ChangePosition = { epoch: "0", t: "0", node: "0", xid: "0", seq: "0" };

const PARTS = ["epoch", "t", "node", "xid", "seq"] as const;
const PART_MAX: Record<(typeof PARTS)[number], bigint> = {
  epoch: 2n ** 63n - 1n,
  t: 2n ** 63n - 1n,
  node: 2n ** 31n - 1n,
  xid: 2n ** 64n - 1n,
  seq: 2n ** 63n - 1n,
};
const INDEX_MAX = 2n ** 31n - 1n;

/**
 * Opaque to readers, so that what a position is may change; it names its project, so that no
 * other project reads it. A position of one Postgres keeps the cursor's first form
 * (`changes:project:xid:seq`), so that its readers' cursors stay valid on Citus too; an `index`
 * comes last.
 */
export function changeCursor(projectId: number, position: ChangePosition): string {
  const row =
    position.epoch === "0" && position.t === "0" && position.node === "0"
      ? [position.xid, position.seq]
      : PARTS.map((part) => position[part]);
  const parts = position.index === undefined ? row : [...row, position.index];
  return Buffer.from(`changes:${projectId}:${parts.join(":")}`).toString("base64url");
}

/** The position a cursor of the project's feed names, or null for text that is no such cursor. */
export function changePositionOf(projectId: number, cursor: string): ChangePosition | null {
  const match = /^changes:([0-9]{1,10}):((?:[0-9]{1,20}:){1,5}[0-9]{1,20})$/.exec(
    Buffer.from(cursor, "base64url").toString("utf8"),
  );
  if (match === null || Number(match[1]) !== projectId) return null;
  const values = (match[2] as string).split(":");
  const withIndex = values.length === 3 || values.length === PARTS.length + 1;
  const row = withIndex ? values.slice(0, -1) : values;
  if (row.length !== 2 && row.length !== PARTS.length) return null;
  const named = row.length === 2 ? ["0", "0", "0", ...row] : row;
  // Read as numbers, so that a text with leading zeros names a position written another way.
  const position = Object.fromEntries(
    PARTS.map((part, i) => [part, BigInt(named[i] as string).toString()]),
  ) as unknown as ChangePosition;
  if (PARTS.some((part) => BigInt(position[part]) > PART_MAX[part])) return null;
  if (withIndex) {
    position.index = BigInt(values[values.length - 1] as string).toString();
    if (BigInt(position.index) > INDEX_MAX) return null;
  }
  // One text per position: a cursor written another way (leading zeros, base64 padding) is none of ours.
  return changeCursor(projectId, position) === cursor ? position : null;
}

/** Whether position `a` comes before `b`. */
export function positionBefore(a: ChangePosition, b: ChangePosition): boolean {
  for (const part of PARTS) {
    const [x, y] = [BigInt(a[part]), BigInt(b[part])];
    if (x !== y) return x < y;
  }
  // Of one row: a position without an index is past every change of it.
  if (a.index === undefined) return false;
  return b.index === undefined || BigInt(a.index) < BigInt(b.index);
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
