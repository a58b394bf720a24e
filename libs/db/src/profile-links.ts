import { aliasGroup, canonicalKey, type AliasEdge } from "@cm/domain";
import { PROFILE_LINKS_LOCK } from "./advisory-locks";
import type { Db } from "./connect";
import { findProfiles, type StoredProfile } from "./profiles";
import type { RecordedErasure } from "./profile-erasures";

/**
 * Records a job's reidentify links and delete erasures (a redelivered link is kept once, a
 * key's latest erasure wins), then waits for the project's PROFILE_LINKS_LOCK, held until the
 * transaction ends: one statement, as these are on every job that carries a delete. Reading
 * what others recorded after the lock, not before writing, is what the lock must order.
 */
export async function recordLinkOperations(
  tx: Db,
  projectId: number,
  links: readonly AliasEdge[],
  erasures: readonly RecordedErasure[],
): Promise<void> {
  await tx`
    WITH new_links AS (
      INSERT INTO profile_links (project_id, from_key, to_key, t)
      SELECT ${projectId}, l."from", l."to", l.t
        FROM jsonb_to_recordset(${tx.json(links as never)}) AS l ("from" text, "to" text, t bigint)
      ON CONFLICT DO NOTHING
    ), new_erasures AS (
      INSERT INTO profile_erasures AS e (project_id, key, t)
      SELECT ${projectId}, x.key, max(x.t)
        FROM jsonb_to_recordset(${tx.json(erasures as never)}) AS x (key text, t bigint)
       GROUP BY x.key
      ON CONFLICT (project_id, key) DO UPDATE SET t = greatest(e.t, excluded.t)
    )
    SELECT pg_advisory_xact_lock(${PROFILE_LINKS_LOCK}::integer, ${projectId}::integer)`;
}

/** The ids linked with any of some keys, and what was recorded of them. */
export interface LinkedComponents {
  links: AliasEdge[];
  erasures: RecordedErasure[];
}

/**
 * Every link of the ids linked with any of `keys`, in either direction and whatever their
 * stamps (all that libs/domain's aliasGroup and canonicalKey need to answer for those keys;
 * none for ids never reidentified), and the recorded erasures of those ids.
 */
export async function linkedComponents(sql: Db, projectId: number, keys: readonly string[]): Promise<LinkedComponents> {
  const [row] = await sql<LinkedComponents[]>`
    WITH RECURSIVE component (key) AS (
      SELECT unnest(${keys as string[]}::text[])
      UNION
      -- Each direction on its own index (a join on either key scanned the whole table).
      SELECT linked.key
        FROM component AS c
        CROSS JOIN LATERAL (
          SELECT to_key AS key FROM profile_links WHERE project_id = ${projectId} AND from_key = c.key
          UNION ALL
          SELECT from_key FROM profile_links WHERE project_id = ${projectId} AND to_key = c.key
        ) AS linked
    )
    SELECT coalesce((SELECT json_agg(json_build_object('from', from_key, 'to', to_key, 't', t))
                       FROM profile_links
                      WHERE project_id = ${projectId} AND from_key IN (SELECT key FROM component)), '[]') AS links,
           coalesce((SELECT json_agg(json_build_object('key', key, 't', t))
                       FROM profile_erasures
                      WHERE project_id = ${projectId} AND key IN (SELECT key FROM component)), '[]') AS erasures`;
  return row as LinkedComponents;
}

/** The rows of one profile: those of every id linked with `key`, and the key it is known by. */
export interface LinkedProfile {
  key: string;
  rows: StoredProfile[];
}

/** The profile `key` names, as the profile read shows it (libs/domain's visibleProfile of the rows). */
export async function findLinkedProfile(sql: Db, projectId: number, key: string): Promise<LinkedProfile> {
  const { links } = await linkedComponents(sql, projectId, [key]);
  return { key: canonicalKey(links, key), rows: await findProfiles(sql, projectId, aliasGroup(links, key)) };
}
