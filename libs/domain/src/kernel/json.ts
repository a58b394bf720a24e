import type { Problem } from "./problems";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** JSON with object keys sorted at every depth, so equal values always give equal text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  // Concatenation, not map and join: every event's data and every stored field's tie-breaker go through here.
  if (Array.isArray(value)) {
    let text = "[";
    for (let i = 0; i < value.length; i++) text += (i === 0 ? "" : ",") + canonicalJson(value[i]);
    return `${text}]`;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  let text = "{";
  for (let i = 0; i < keys.length; i++) {
    text += `${i === 0 ? "" : ","}${JSON.stringify(keys[i])}:${canonicalJson(record[keys[i]!])}`;
  }
  return `${text}}`;
}

/** The fields of a parsed JSON object, or null for any other value. */
export function jsonObjectFields(value: unknown): Record<string, unknown> | null {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}

/** Largest JSON request body the API reads (decisions.md: 413 above it). */
export const MAX_BODY_BYTES = 256 * 1024;

/** Deepest nesting of objects and arrays a request may hold (documented in docs/identify.md). */
export const MAX_JSON_DEPTH = 32;

/**
 * Whether objects and arrays nest in `value` deeper than `limit` levels. The walk goes no deeper
 * than `limit` calls, so a nesting that would overflow the stack of a full recursive walk (what
 * this looks for) cannot overflow it; and it allocates nothing, for every queued item goes through it.
 */
export function nestedDeeperThan(value: unknown, limit: number): boolean {
  if (value === null || typeof value !== "object") return false;
  if (limit <= 0) return true;
  if (Array.isArray(value)) {
    for (const inner of value) if (nestedDeeperThan(inner, limit - 1)) return true;
    return false;
  }
  for (const key in value) {
    if (Object.hasOwn(value, key) && nestedDeeperThan((value as Record<string, unknown>)[key], limit - 1)) return true;
  }
  return false;
}

/**
 * The most bytes `value` (parsed JSON, nested no deeper than MAX_JSON_DEPTH) can take written as
 * compact JSON, counted without writing it: 6 a UTF-16 unit of a string or key (an escape such
 * as \u0000 is the longest), 24 a number, 5 a literal, and the punctuation.
 */
export function compactJsonBytesAtMost(value: unknown): number {
  if (typeof value === "string") return 6 * value.length + 2;
  if (typeof value === "number") return 24;
  if (value === null || typeof value !== "object") return 5;
  let bytes = 2;
  if (Array.isArray(value)) {
    for (const item of value) bytes += compactJsonBytesAtMost(item) + 1;
    return bytes;
  }
  for (const key in value)
    bytes += 6 * key.length + 4 + compactJsonBytesAtMost((value as Record<string, unknown>)[key]);
  return bytes;
}

/** Why Postgres text cannot hold this text ("must not …"), or null. */
export function unstorableText(text: string): string | null {
  if (text.includes("\u0000")) return "must not contain the character U+0000";
  if (!text.isWellFormed()) return "must not contain a lone UTF-16 surrogate";
  return null;
}

function textProblem(text: string): string | null {
  const problem = unstorableText(text);
  return problem === null ? null : `text ${problem}`;
}

/**
 * What in a parsed JSON value could not be stored or processed (the first thing found), or
 * nothing. Postgres text and jsonb hold neither U+0000 nor lone surrogates; a number beyond
 * double range (`1e309`) parses to Infinity and would be stored as null; nesting without bound
 * overflows the stack of every recursive reader after us (canonical JSON, JSON.stringify).
 * Refused before anything is queued.
 */
export function jsonValueProblems(value: unknown): Problem[] {
  const problem = firstValueProblem(value, 0);
  return problem === null ? [] : [{ path: "", message: problem }];
}

function firstValueProblem(value: unknown, depth: number): string | null {
  if (typeof value === "string") return textProblem(value);
  if (typeof value === "number") return Number.isFinite(value) ? null : "numbers must be finite";
  if (value === null || typeof value !== "object") return null;
  if (depth >= MAX_JSON_DEPTH) return `JSON must not nest deeper than ${MAX_JSON_DEPTH} levels`;
  // Plain loops: this runs on every identify body, and entries() arrays cost more than the scan.
  if (Array.isArray(value)) {
    for (const item of value) {
      const problem = firstValueProblem(item, depth + 1);
      if (problem !== null) return problem;
    }
    return null;
  }
  for (const key in value) {
    const problem = textProblem(key) ?? firstValueProblem((value as Record<string, unknown>)[key], depth + 1);
    if (problem !== null) return problem;
  }
  return null;
}

/**
 * Clients that cannot nest send an object or a list as JSON text (n8n, form posts): text that
 * opens with `opening` and parses is that value; anything else stays as it is, for validation
 * to refuse.
 */
export function valueFromJsonText(value: unknown, opening: "{" | "["): unknown {
  if (typeof value !== "string" || !value.trimStart().startsWith(opening)) return value;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}
