import { setImmediate as nextTurn } from "node:timers/promises";
import {
  aliasComponents,
  canonicalKey,
  linkedState,
  MAX_LINKED_IDS,
  profilePassesFilter,
  visibleProfile,
  type ProfileFields,
  type ProfileFilter,
  type AliasComponent,
  type ProfileListRequest,
  type VisibleProfile,
} from "@cm/domain";
import type { Db } from "./connect";
import { linkedComponents } from "./profile-links";
import { findProfiles, type StoredProfile } from "./profiles";

/**
 * The most rows one page of a list reads (of the address, with an email): a page then costs the
 * same whatever the filter matches, and may hold fewer profiles than asked, or none, with a
 * cursor to go on (docs/api.md "List users").
 */
export const PROFILE_LIST_SCAN_ROWS = 2_000;

/**
 * The most ids whose rows one page merges into the profiles it lists: a page whose next profile
 * would pass it ends before that profile, with a cursor to go on. At least MAX_LINKED_IDS, so that
 * any profile fits a page of its own.
 */
export const PROFILE_LIST_PAGE_IDS = 2 * MAX_LINKED_IDS;

/** A profile's rows merged as every read shows them. */
export interface ShownProfile {
  visible: VisibleProfile;
  fields: ProfileFields;
  /** When it last changed (ms): the latest change of any of its rows. */
  updatedAt: number;
}

/**
 * The rows of one profile's ids merged field by field (libs/domain linkedState, visibleProfile),
 * as the profile read, the list and ctl export show it; null when they are no profile.
 */
export function shownProfile(rows: readonly StoredProfile[]): ShownProfile | null {
  const state = linkedState(rows.map((row) => row.state));
  const visible = visibleProfile(state);
  if (visible === null) return null;
  const updatedAt = Math.max(...rows.map((row) => row.updatedAt.getTime()));
  return {
    visible,
    updatedAt,
    fields: {
      email: visible.email,
      phone_number: visible.phoneNumber,
      channels: visible.channels,
      data: visible.data,
      tags: visible.tags,
      unsubscribed: visible.unsubscribed,
      created_at: new Date(state.createdT as number).toISOString(),
      updated_at: new Date(updatedAt).toISOString(),
    },
  };
}

/** One profile: the id it is shown under, every id's key, its rows, and what they show. */
export interface ProfileRows {
  id: string;
  keys: readonly string[];
  rows: readonly StoredProfile[];
  shown: ShownProfile;
}

/** Rows of a page of a profile list: the keys of those that pass, and where the next page starts. */
export interface ProfileListScan {
  keys: string[];
  /** The last key read, where the next page starts; null when no row is left. */
  nextAfterKey: string | null;
}

/**
 * The condition on one row: libs/domain's profilePassesFilter, read on the row alone. A profile
 * passes only if one of its rows does (its values are each some row's).
 */
function rowPasses(sql: Db, filter: ProfileFilter) {
  return sql`(${filter.email === null ? sql`TRUE` : sql`email_lookup = ${filter.email}`}
              AND ${filter.tag === null ? sql`TRUE` : sql`(tags -> ${filter.tag} ->> 'v') = 'true'`}
              AND ${filter.unsubscribed === null ? sql`TRUE` : sql`coalesce((unsubscribed ->> 'v')::boolean, false) = ${filter.unsubscribed}`}
              AND ${filter.updatedSince === null ? sql`TRUE` : sql`updated_at >= ${new Date(filter.updatedSince)}`})`;
}

/**
 * The stored rows of a page of a project's profile list, in key order after `afterKey`: rows,
 * not profiles (a reidentified user has a row per id, and a row may not be a profile at all);
 * the use case makes profiles of them.
 */
async function scanProfileList(
  sql: Db,
  projectId: number,
  { limit, afterKey, filter }: ProfileListRequest,
): Promise<ProfileListScan> {
  // Every key is "h:…", after the empty text in any collation.
  const after = afterKey ?? "";
  // Where a page stops however few rows pass, read from an index alone: the primary key's, or
  // the email index's, which holds an address's rows in key order (an address may have many).
  const [bound] = await sql<{ key: string }[]>`
    SELECT key FROM profiles
     WHERE project_id = ${projectId} AND key > ${after}
       ${filter.email === null ? sql`` : sql`AND email_lookup = ${filter.email}`}
     ORDER BY key OFFSET ${PROFILE_LIST_SCAN_ROWS - 1} LIMIT 1`;
  const rows = await sql<{ key: string }[]>`
    SELECT key FROM profiles
     WHERE project_id = ${projectId} AND key > ${after}
       ${bound === undefined ? sql`` : sql`AND key <= ${bound.key}`}
       AND ${rowPasses(sql, filter)}
     ORDER BY key LIMIT ${limit}`;
  const keys = rows.map((row) => row.key);
  if (keys.length === limit) return { keys, nextAfterKey: keys[limit - 1] as string };
  return { keys, nextAfterKey: bound?.key ?? null };
}

/** A page of a profile list: its profiles' rows, and where the next page starts. */
export interface ProfilePageRows {
  profiles: ProfileRows[];
  /** Stored rows the page went through that passed the filter row by row (with no filter, every row read). */
  rowsPassed: number;
  /** Null on the last page. */
  nextAfterKey: string | null;
}

/** Of `keys`, those whose rows pass the filter row by row, in the store's key order. */
async function keysPassing(sql: Db, projectId: number, keys: readonly string[], filter: ProfileFilter) {
  if (keys.length === 0) return [];
  const rows = await sql<{ key: string }[]>`
    SELECT key FROM profiles
     WHERE project_id = ${projectId} AND key = ANY(${keys as string[]}::text[]) AND ${rowPasses(sql, filter)}
     ORDER BY key`;
  return rows.map((row) => row.key);
}

/**
 * A page of the project's profiles that pass the filter (docs/api.md "List users"). The store
 * lists rows, and a reidentified user has one per id: a profile is listed at the first of its
 * rows (in key order) that passes, and only there, so once in the whole list whichever of its
 * rows the filter finds; and as its rows merged show it (libs/domain visibleProfile). Only the
 * rows of the profiles listed on the page are read, at most PROFILE_LIST_PAGE_IDS of them.
 */
export async function findProfilePage(
  sql: Db,
  projectId: number,
  request: ProfileListRequest,
): Promise<ProfilePageRows> {
  const scan = await scanProfileList(sql, projectId, request);
  const { links } = await linkedComponents(sql, projectId, scan.keys);
  const components = aliasComponents(links, scan.keys);
  // Where a profile is listed: its first row that passes, found among its ids' keys alone. A key
  // of no link is its own profile's, and passed the scan.
  const linkedKeys = [...new Set([...components.values()].filter((c) => c.keys.length > 1))].flatMap((c) => c.keys);
  const listedAt = new Map<AliasComponent, string>();
  for (const key of await keysPassing(sql, projectId, linkedKeys, request.filter)) {
    const component = components.get(key) as AliasComponent;
    if (!listedAt.has(component)) listedAt.set(component, key);
  }

  const listed: { key: string; component: AliasComponent }[] = [];
  let ids = 0;
  let nextAfterKey = scan.nextAfterKey;
  let rowsPassed = scan.keys.length;
  for (const [index, key] of scan.keys.entries()) {
    const component = components.get(key) as AliasComponent;
    if (component.keys.length > 1 && listedAt.get(component) !== key) continue;
    if (listed.length > 0 && ids + component.keys.length > PROFILE_LIST_PAGE_IDS) {
      // The page ends before this profile: the next starts at its key.
      nextAfterKey = scan.keys[index - 1] ?? null;
      rowsPassed = index;
      break;
    }
    ids += component.keys.length;
    listed.push({ key, component });
  }

  // In the store's key order (findProfiles'), as the scan and the cursor are.
  const rows = await findProfiles(
    sql,
    projectId,
    listed.flatMap(({ component }) => component.keys),
  );
  const rowsOf = new Map<AliasComponent, StoredProfile[]>();
  for (const row of rows) {
    const component = components.get(row.key) as AliasComponent;
    const rowsSoFar = rowsOf.get(component);
    if (rowsSoFar === undefined) rowsOf.set(component, [row]);
    else rowsSoFar.push(row);
  }
  const profiles: ProfileRows[] = [];
  for (const [index, { key, component }] of listed.entries()) {
    // Merging a profile of 1,000 ids takes milliseconds: other requests' turns come between them.
    if (index > 0) await nextTurn();
    const groupRows = rowsOf.get(component) ?? [];
    const shown = shownProfile(groupRows);
    if (shown === null || !profilePassesFilter(shown.visible, shown.updatedAt, request.filter)) continue;
    const shownKey = canonicalKey(component.edges, key);
    // The id of the latest reidentify, else (an erasure left that row without it) one the profile still holds.
    const id = [groupRows.find((row) => row.key === shownKey), ...groupRows].find(
      (row) => row !== undefined && row.externalId !== null,
    )?.externalId;
    if (id === undefined || id === null) continue;
    profiles.push({ id, keys: component.keys, rows: groupRows, shown });
  }
  return { profiles, rowsPassed, nextAfterKey };
}
