import type { ProfileFilter, ProfileListRequest } from "@cm/domain";
import type { Db } from "./connect";

/**
 * The most rows one page of a list reads when no index serves its filter (anything but email):
 * a page then costs the same whatever the filter matches, and may hold fewer profiles than asked,
 * or none, with a cursor to go on (docs/api.md "List users").
 */
export const PROFILE_LIST_SCAN_ROWS = 2_000;

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
export async function scanProfileList(
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
