import type { AliasEdge } from "@cm/domain";
import type { Db } from "./connect";

/** A reidentify's link; recording one twice (a redelivery) keeps one. */
export async function recordProfileLink(sql: Db, projectId: number, link: AliasEdge): Promise<void> {
  await sql`
    INSERT INTO profile_links (project_id, from_key, to_key, t) VALUES (${projectId}, ${link.from}, ${link.to}, ${link.t})
    ON CONFLICT DO NOTHING`;
}

/**
 * Every link of the ids linked with `key`, in either direction and whatever their stamps: all
 * that libs/domain's aliasGroup and canonicalKey need to answer for `key`. None for an id that
 * was never reidentified.
 */
export async function linksOfComponent(sql: Db, projectId: number, key: string): Promise<AliasEdge[]> {
  return sql<AliasEdge[]>`
    WITH RECURSIVE component (key) AS (
      SELECT ${key}::text
      UNION
      SELECT CASE WHEN l.from_key = c.key THEN l.to_key ELSE l.from_key END
        FROM component AS c
        JOIN profile_links AS l ON l.project_id = ${projectId} AND (l.from_key = c.key OR l.to_key = c.key)
    )
    SELECT from_key AS "from", to_key AS "to", t::float8 AS t
      FROM profile_links
     WHERE project_id = ${projectId} AND from_key IN (SELECT key FROM component)`;
}
