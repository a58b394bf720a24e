import {
  aliasGroup,
  canonicalKey,
  linkedState,
  profilePassesFilter,
  rowPassesFilter,
  visibleProfile,
  type ProfileFields,
  type ProfileFilter,
  type ProfileListRequest,
  type VisibleProfile,
} from "@cm/domain";
import type { Db } from "./connect";
import { linkedComponents } from "./profile-links";
import { findProfiles, type StoredProfile } from "./profiles";

/**
 * The most rows one page of a list reads when no index serves its filter (anything but email):
 * a page then costs the same whatever the filter matches, and may hold fewer profiles than asked,
 * or none, with a cursor to go on (docs/api.md "List users").
 */
export const PROFILE_LIST_SCAN_ROWS = 2_000;

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

/** The condition on one row: libs/domain's rowPassesFilter, read the same way. */
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
  // Where a page stops however few rows pass, read from the primary key's index alone; the
  // email index finds an address's few rows without one.
  const [bound] =
    filter.email !== null
      ? []
      : await sql<{ key: string }[]>`
          SELECT key FROM profiles WHERE project_id = ${projectId} AND key > ${after}
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

/**
 * A page of the project's profiles that pass the filter (docs/api.md "List users"). The store
 * lists rows, and a reidentified user has one per id: a profile is listed at the first of its
 * rows (in key order) that passes, and only there, so once in the whole list whichever of its
 * rows the filter finds; and as its rows merged show it (libs/domain visibleProfile).
 */
export async function findProfilePage(
  sql: Db,
  projectId: number,
  request: ProfileListRequest,
): Promise<ProfilePageRows> {
  const { keys, nextAfterKey } = await scanProfileList(sql, projectId, request);
  const { links } = await linkedComponents(sql, projectId, keys);
  const groups = keys.map((key) => ({ key, keys: aliasGroup(links, key) }));
  const rows = await findProfiles(sql, projectId, [...new Set(groups.flatMap((group) => group.keys))]);
  const rowOf = new Map(rows.map((row) => [row.key, row]));

  const profiles: ProfileRows[] = [];
  for (const group of groups) {
    // In the store's key order (findProfiles'), which the scan and the cursor follow too.
    const inGroup = new Set(group.keys);
    const groupRows = rows.filter((row) => inGroup.has(row.key));
    const firstPassing = groupRows.find((row) => rowPassesFilter(row.state, row.updatedAt.getTime(), request.filter));
    if (firstPassing?.key !== group.key) continue;
    const shown = shownProfile(groupRows);
    if (shown === null || !profilePassesFilter(shown.visible, shown.updatedAt, request.filter)) continue;
    const shownKey = canonicalKey(links, group.key);
    // The id of the latest reidentify, else (an erasure left that row without it) one the profile still holds.
    const id = [rowOf.get(shownKey), ...groupRows].find(
      (row) => row !== undefined && row.externalId !== null,
    )?.externalId;
    if (id === undefined || id === null) continue;
    profiles.push({ id, keys: group.keys, rows: groupRows, shown });
  }
  return { profiles, rowsPassed: keys.length, nextAfterKey };
}
