import { unstorableText } from "./json";
import type { Problem } from "./problems";
import { parseTimestamp, TIMESTAMP_RULE } from "./time";

/** A query string's values as Koa gives them (a repeated parameter is a list). */
export type QueryValues = Record<string, string | string[] | undefined>;

/**
 * Reads single query parameters, collecting a problem for a repeated one (Koa gives a list), for
 * text Postgres cannot hold (U+0000, a lone surrogate) and for a page size or a time out of range,
 * so that a list's parser reads like its parameters.
 */
export function queryReader(query: QueryValues, problems: Problem[]) {
  const text = (name: string): string | null => {
    const value = query[name];
    if (value === undefined) return null;
    if (typeof value !== "string") {
      problems.push({ path: `query.${name}`, message: `${name} must be given once` });
      return null;
    }
    // Postgres takes no such text, not even to compare it with what it holds.
    const unstorable = unstorableText(value);
    if (unstorable !== null) problems.push({ path: `query.${name}`, message: `${name} ${unstorable}` });
    return unstorable === null ? value : null;
  };
  const limit = (fallback: number, max: number): number => {
    const value = text("limit");
    if (value === null) return fallback;
    // No more digits than `max` has: a long run of digits is no page size, whatever it reads as.
    const digits = new RegExp(`^[0-9]{1,${String(max).length}}$`);
    if (digits.test(value) && Number(value) >= 1 && Number(value) <= max) return Number(value);
    problems.push({ path: "query.limit", message: `limit must be an integer from 1 to ${max}` });
    return fallback;
  };
  /** A time in ms from an ISO 8601 date-time or Unix seconds (parseTimestamp), or null when not given. */
  const time = (name: string): number | null => {
    const value = text(name);
    if (value === null) return null;
    const ms = parseTimestamp(value);
    if (ms === null) problems.push({ path: `query.${name}`, message: `${name} must be ${TIMESTAMP_RULE}` });
    return ms;
  };
  /** The place in a list a `cursor` names, read by `fromCursor`; one it cannot read is a problem. */
  const cursor = <Place>(fromCursor: (value: string) => Place | null): Place | null => {
    const value = text("cursor");
    if (value === null) return null;
    const place = fromCursor(value);
    if (place === null)
      problems.push({ path: "query.cursor", message: "cursor must be a next_cursor from a previous page" });
    return place;
  };
  return { text, limit, time, cursor };
}
