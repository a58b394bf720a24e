import type { ProfileState } from "@cm/domain";
import type { Db } from "./connect";

export interface ProfileWrite {
  projectId: number;
  key: string;
  externalId: string | null;
  state: ProfileState;
}

export interface ApplyResult {
  applied: number;
  /** Topic choices dropped because the topic is not one of the profile's project. */
  ignoredTopics: { projectId: number; key: string; topicIds: string[] }[];
}

/**
 * Merges a batch of profile states into the stored ones in a single statement. Each profile
 * must appear once (merge duplicates first); rows are written in key order so that two
 * workers writing overlapping batches lock rows in the same order and cannot deadlock.
 */
export async function applyProfileWrites(sql: Db, writes: readonly ProfileWrite[]): Promise<ApplyResult> {
  const rows = writes.map((w) => ({
    project_id: w.projectId,
    key: w.key,
    external_id: w.externalId,
    created_t: w.state.createdT,
    email: w.state.email,
    phone_number: w.state.phoneNumber,
    data: w.state.data,
    channels: w.state.channels,
    topics: w.state.topics,
  }));
  // Topic ids are compared as bigint: a choice for an id past the integer range names no topic
  // of ours and is ignored like any unknown topic, instead of failing the cast.
  const [result] = await sql<ApplyResult[]>`
    WITH input AS (
      SELECT r.project_id, r.key, r.external_id, r.created_t, r.email, r.phone_number, r.data, r.channels,
             CASE WHEN r.topics = '{}' THEN '{}'::jsonb
                  ELSE coalesce((SELECT jsonb_object_agg(c.key, c.value)
                                   FROM jsonb_each(r.topics) AS c
                                   JOIN topics AS t ON t.id = c.key::bigint AND t.project_id = r.project_id),
                                '{}'::jsonb) END AS topic_choices,
             CASE WHEN r.topics = '{}' THEN '{}'::text[]
                  ELSE ARRAY(SELECT c.key
                               FROM jsonb_each(r.topics) AS c
                              WHERE NOT EXISTS (SELECT 1 FROM topics AS t
                                                 WHERE t.id = c.key::bigint AND t.project_id = r.project_id)) END AS unknown_topics
        FROM jsonb_to_recordset(${sql.json(rows as never)}) AS r (
          project_id integer, key text, external_id text, created_t bigint,
          email jsonb, phone_number jsonb, data jsonb, channels jsonb, topics jsonb)
    ), upserted AS (
      INSERT INTO profiles AS p (project_id, key, external_id, created_t, email, phone_number, data, channels, topic_choices)
      SELECT project_id, key, external_id, created_t, email, phone_number, data, channels, topic_choices
        FROM input
       ORDER BY project_id, key
      ON CONFLICT (project_id, key) DO UPDATE SET
        created_t     = least(p.created_t, excluded.created_t),
        email         = lww_newest(p.email, excluded.email),
        phone_number  = lww_newest(p.phone_number, excluded.phone_number),
        -- The map merges are written out (not calls of a function doing the same) because
        -- Postgres cannot inline a function holding a subquery, and calling one per row
        -- cost a third of the statement's time.
        data          = p.data || coalesce(
                          (SELECT jsonb_object_agg(i.key, i.value) FROM jsonb_each(excluded.data) AS i
                            WHERE NOT p.data ? i.key OR lww_is_newer(i.value, p.data -> i.key)), '{}'),
        channels      = p.channels || coalesce(
                          (SELECT jsonb_object_agg(i.key, i.value) FROM jsonb_each(excluded.channels) AS i
                            WHERE NOT p.channels ? i.key OR lww_is_newer(i.value, p.channels -> i.key)), '{}'),
        topic_choices = p.topic_choices || coalesce(
                          (SELECT jsonb_object_agg(i.key, i.value) FROM jsonb_each(excluded.topic_choices) AS i
                            WHERE NOT p.topic_choices ? i.key OR lww_is_newer(i.value, p.topic_choices -> i.key)), '{}'),
        updated_at    = now()
      RETURNING 1
    )
    SELECT (SELECT count(*) FROM upserted)::integer AS applied,
           coalesce((SELECT jsonb_agg(jsonb_build_object(
                              'projectId', project_id, 'key', key, 'topicIds', unknown_topics))
                       FROM input WHERE cardinality(unknown_topics) > 0), '[]'::jsonb) AS "ignoredTopics"`;
  return result as ApplyResult;
}

export interface StoredProfile {
  key: string;
  externalId: string | null;
  state: ProfileState;
  updatedAt: Date;
}

/** The profile of `key`. Rows that are not profiles yet (only update_only updates seen) are not returned. */
export async function findProfile(sql: Db, projectId: number, key: string): Promise<StoredProfile | null> {
  const [row] = await sql<
    {
      key: string;
      external_id: string | null;
      created_t: number | null;
      email: ProfileState["email"];
      phone_number: ProfileState["phoneNumber"];
      data: ProfileState["data"];
      channels: ProfileState["channels"];
      topic_choices: ProfileState["topics"];
      updated_at: Date;
    }[]
  >`
    SELECT key, external_id, created_t::float8 AS created_t, email, phone_number, data, channels, topic_choices, updated_at
      FROM profiles
     WHERE project_id = ${projectId} AND key = ${key} AND created_t IS NOT NULL`;
  if (row === undefined) return null;
  return {
    key: row.key,
    externalId: row.external_id,
    state: {
      createdT: row.created_t,
      email: row.email,
      phoneNumber: row.phone_number,
      data: row.data,
      channels: row.channels,
      topics: row.topic_choices,
    },
    updatedAt: row.updated_at,
  };
}

/** The event as queued, or, when even JSON.stringify fails on it (nesting past the stack), why. */
function deadLetterText(event: unknown): string {
  try {
    return JSON.stringify(event);
  } catch (error) {
    return JSON.stringify({ unwritable: error instanceof Error ? error.message : String(error) });
  }
}

export async function recordDeadLetter(
  sql: Db,
  letter: { projectId: number | null; jobId: string | null; event: unknown; error: string },
): Promise<void> {
  await sql`
    INSERT INTO identify_dead_letters (project_id, job_id, event, error)
    VALUES (${letter.projectId}, ${letter.jobId}, ${deadLetterText(letter.event)}, ${letter.error})`;
}
