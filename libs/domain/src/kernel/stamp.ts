import { createHash } from "node:crypto";
import { canonicalJson } from "./json";

/**
 * A value with the time of the update that wrote it. `t` is milliseconds since the epoch
 * (extras.created_at, or receive time); the value's tie-breaker breaks ties between different
 * values written at the same `t`, so the winner never depends on the order updates are applied
 * in. `h` holds it, unless the value is its own (breaksOwnTies).
 */
export interface Stamped<V> {
  t: number;
  h?: string;
  v: V;
}

const SHORT_TIE_BREAKER = 64;

/**
 * Equal values give equal tie-breakers, different values (all but surely) different ones.
 * Short values are their own canonical JSON, long ones a hash of it (hashing every field was a
 * fifth of a worker's time). Either way the text is ASCII, so JavaScript's string order and
 * Postgres' COLLATE "C" byte order agree.
 */
export function tieBreaker(value: unknown): string {
  const text = canonicalJson(value);
  if (text.length > SHORT_TIE_BREAKER) return `#${createHash("sha256").update(text).digest("base64")}`;
  return /[\u0080-\uffff]/.test(text)
    ? text.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)
    : text;
}

/** Printable ASCII but `"` and `\`, short: JSON writes such a string as it is, in quotes. */
const PLAIN_SHORT_TEXT = /^[\x20\x21\x23-\x5b\x5d-\x7e]{0,62}$/;

/**
 * Whether the value's tie-breaker is the text Postgres writes for it as jsonb, `(s -> 'v')::text`
 * (lww_is_newer, libs/db/functions/lww.sql): null, a boolean, a safe integer, or a short plain string. Such
 * values, most of what identifies carry, are stamped without `h`: storing it too made every
 * row, its JSON and its WAL carry them twice.
 */
function breaksOwnTies(v: unknown): boolean {
  return (
    v === null ||
    typeof v === "boolean" ||
    (typeof v === "number" && Number.isSafeInteger(v)) ||
    (typeof v === "string" && PLAIN_SHORT_TEXT.test(v))
  );
}

export function stamp<V>(t: number, v: V): Stamped<V> {
  return breaksOwnTies(v) ? { t, v } : { t, h: tieBreaker(v), v };
}

/** True when `a` was written after `b`: later time wins, then the larger tie-breaker. */
export function isNewer(a: Stamped<unknown>, b: Stamped<unknown>): boolean {
  return a.t !== b.t ? a.t > b.t : (a.h ?? tieBreaker(a.v)) > (b.h ?? tieBreaker(b.v));
}

export function newest<V>(a: Stamped<V> | null, b: Stamped<V> | null): Stamped<V> | null {
  if (a === null) return b;
  if (b === null) return a;
  return isNewer(b, a) ? b : a;
}

/**
 * A map of field names to values that has no prototype: a data key named `toString`,
 * `constructor` or `__proto__` is a key like any other, not a member of Object.prototype.
 */
export function fieldMap<V>(): Record<string, V> {
  return Object.create(null) as Record<string, V>;
}

export function mergeStampedMaps<V>(
  current: Record<string, Stamped<V>>,
  incoming: Record<string, Stamped<V>>,
): Record<string, Stamped<V>> {
  return mergeStampedMapInto(Object.assign(fieldMap<Stamped<V>>(), current), incoming);
}

/** mergeStampedMaps into `target` itself, which it returns. */
export function mergeStampedMapInto<V>(
  target: Record<string, Stamped<V>>,
  incoming: Record<string, Stamped<V>>,
): Record<string, Stamped<V>> {
  for (const [key, entry] of Object.entries(incoming)) {
    const existing = target[key];
    if (existing === undefined || isNewer(entry, existing)) target[key] = entry;
  }
  return target;
}
