import type { AliasEdge } from "@cm/domain";
import type { Db } from "./connect";

/** Reidentifies' links; recording one twice (a redelivery) keeps one. */
export async function recordProfileLinks(sql: Db, projectId: number, links: readonly AliasEdge[]): Promise<void> {
  if (links.length === 0) return;
  const rows = links.map((link) => ({ project_id: projectId, from_key: link.from, to_key: link.to, t: link.t }));
  await sql`INSERT INTO profile_links ${sql(rows)} ON CONFLICT DO NOTHING`;
}

/**
 * Every link of the ids linked with any of `keys`, in either direction and whatever their
 * stamps: all that libs/domain's aliasGroup and canonicalKey need to answer for those keys.
 * None for ids that were never reidentified.
 */
export async function linksOfComponents(sql: Db, projectId: number, keys: readonly string[]): Promise<AliasEdge[]> {
  return sql<AliasEdge[]>`
    WITH RECURSIVE component (key) AS (
      SELECT unnest(${keys as string[]}::text[])
      UNION
      SELECT CASE WHEN l.from_key = c.key THEN l.to_key ELSE l.from_key END
        FROM component AS c
        JOIN profile_links AS l ON l.project_id = ${projectId} AND (l.from_key = c.key OR l.to_key = c.key)
    )
    SELECT from_key AS "from", to_key AS "to", t::float8 AS t
      FROM profile_links
     WHERE project_id = ${projectId} AND from_key IN (SELECT key FROM component)`;
}
