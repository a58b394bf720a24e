import type { Parsed, Problem } from "../kernel/problems";
import { queryReader, type QueryValues } from "../kernel/query-values";
import type { VisibleProfile } from "./profile-state";

export const PROFILE_PAGE_DEFAULT = 25;
export const PROFILE_PAGE_MAX = 100;

/** What a listed profile must hold; null places no condition. */
export interface ProfileFilter {
  /** In emailLookupForm. */
  email: string | null;
  /** A tag that is on. */
  tag: string | null;
  unsubscribed: boolean | null;
  /** Changed at or after this time (ms). */
  updatedSince: number | null;
}

/** A page of a project's profiles in stored-key order: those after `afterKey` that pass `filter`. */
export interface ProfileListRequest {
  limit: number;
  afterKey: string | null;
  filter: ProfileFilter;
}

/**
 * Emails are matched ignoring the case of ASCII letters only: Postgres's lower() under the C
 * collation does the same, so the index of stored addresses (migration 018) and the checks made
 * here agree on every address, whatever the database's collation.
 */
export function emailLookupForm(email: string): string {
  return email.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
}

const PROFILE_CURSOR_TEXT = /^profile:(h:[A-Za-z0-9_-]{22})$/;

/** Opaque to clients, so the keyset behind it can change without breaking them. */
export function profileCursor(lastKey: string): string {
  return Buffer.from(`profile:${lastKey}`).toString("base64url");
}

function afterKeyFromCursor(cursor: string): string | null {
  const match = PROFILE_CURSOR_TEXT.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (match === null || profileCursor(match[1] as string) !== cursor) return null;
  return match[1] as string;
}

/** Reads `limit`, `cursor`, `email`, `tag`, `unsubscribed` and `updated_since` from a query string. */
export function profileListRequest(query: QueryValues): Parsed<ProfileListRequest> {
  const problems: Problem[] = [];
  const { text, limit, time, cursor } = queryReader(query, problems);
  const request: ProfileListRequest = {
    limit: limit(PROFILE_PAGE_DEFAULT, PROFILE_PAGE_MAX),
    afterKey: cursor(afterKeyFromCursor),
    filter: { email: null, tag: null, unsubscribed: null, updatedSince: time("updated_since") },
  };
  const email = text("email");
  if (email !== null) {
    if (email.length >= 1 && email.length < 255) request.filter.email = emailLookupForm(email);
    else problems.push({ path: "query.email", message: "email must be 1 to 254 characters" });
  }
  const tag = text("tag");
  if (tag !== null) {
    if (tag.length >= 1 && tag.length <= 255) request.filter.tag = tag;
    else problems.push({ path: "query.tag", message: "tag must be 1 to 255 characters" });
  }
  const unsubscribed = text("unsubscribed");
  if (unsubscribed === "true" || unsubscribed === "false") request.filter.unsubscribed = unsubscribed === "true";
  else if (unsubscribed !== null)
    problems.push({ path: "query.unsubscribed", message: "unsubscribed must be true or false" });
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value: request };
}

/**
 * Whether a profile, as a reader sees it (its rows merged), passes. libs/db's profile list puts
 * the same condition on each stored row.
 */
export function profilePassesFilter(profile: VisibleProfile, updatedAt: number, filter: ProfileFilter): boolean {
  return (
    (filter.email === null || (profile.email !== null && emailLookupForm(profile.email) === filter.email)) &&
    (filter.tag === null || profile.tags.includes(filter.tag)) &&
    (filter.unsubscribed === null || profile.unsubscribed === filter.unsubscribed) &&
    (filter.updatedSince === null || updatedAt >= filter.updatedSince)
  );
}
