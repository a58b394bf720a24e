import { isMessageNode, type JourneyFile, type JourneyListItem, type JourneyStatus } from "@cm/domain";
import type { Db } from "./connect";
import { jsonParameter } from "./json";

interface JourneyDocument {
  nodes: unknown[];
  edges: unknown[];
  messages: unknown[];
}

interface DrawnIds {
  journey: number;
  nodes: number[];
  messages: number[];
  contents: number[];
}

/**
 * Stores a journey read from an import file (checked by `journeyFileProblems` first) and
 * returns its id. The ids are drawn before the rows are written, so that the file's local node
 * ids map to stored ones and every table is written by one statement, whatever the size of
 * the journey. Run it inside a transaction.
 */
export async function insertJourney(sql: Db, projectId: number, file: JourneyFile): Promise<number> {
  const messageNodes = file.nodes.filter(isMessageNode);
  const contents = messageNodes.flatMap((node, message) =>
    node.message.contents.map((content) => ({ message, ...content })),
  );
  const [ids] = await sql<DrawnIds[]>`
    SELECT nextval('journeys_id_seq')::integer AS journey,
           ARRAY(SELECT nextval('journey_nodes_id_seq')::integer FROM generate_series(1, ${file.nodes.length}) ORDER BY 1) AS nodes,
           ARRAY(SELECT nextval('messages_id_seq')::integer FROM generate_series(1, ${messageNodes.length}) ORDER BY 1) AS messages,
           ARRAY(SELECT nextval('message_contents_id_seq')::integer FROM generate_series(1, ${contents.length}) ORDER BY 1) AS contents`;
  const { journey: journeyId, nodes: nodeIds, messages: messageIds, contents: contentIds } = ids as DrawnIds;
  const storedNodeId = new Map(file.nodes.map((node, i) => [node.id, nodeIds[i] as number]));
  const nodeIdOf = (localId: number) => storedNodeId.get(localId) as number;

  const nodeRows = file.nodes.map((node) => ({
    id: nodeIdOf(node.id),
    type: node.type,
    ...(node.type === "delay" && {
      delay_duration: node.delay.duration,
      delay_duration_unit: node.delay.duration_unit,
      delay_delivery_option: node.delay.delivery_option,
      delay_property: node.delay.delay_property ?? null,
      delay_property_type: node.delay.property_type ?? null,
      delay_preferred_delivery_time: node.delay.preferred_delivery_time ?? null,
    }),
    ...(node.type === "branch" && {
      conditions: { combinator: node.conditions.combinator, groups: node.conditions.groups },
    }),
    ...(isMessageNode(node) && { title: node.title ?? null }),
  }));
  const edgeRows = file.edges.map((edge) => ({
    from_node_id: nodeIdOf(edge.from),
    to_node_id: nodeIdOf(edge.to),
    branch_index: edge.branch_index ?? null,
  }));
  const messageRows = messageNodes.map((node, i) => ({
    id: messageIds[i] as number,
    node_id: nodeIdOf(node.id),
    from_address: node.message.from ?? null,
    reply_to: node.message.reply_to ?? null,
  }));
  const contentRows = contents.map((content, i) => ({
    id: contentIds[i] as number,
    message_id: messageIds[content.message] as number,
    locale: content.locale,
    is_default: content.is_default,
    subject: content.subject,
    preheader_text: content.preheader_text,
  }));
  const bodyRows = contents.flatMap(({ body }, i) =>
    body === undefined
      ? []
      : [{ content_id: contentIds[i] as number, html: body.html ?? null, text: body.text ?? null }],
  );

  await sql`
    INSERT INTO journeys (id, project_id, name, description, status, trigger_type, trigger_event_name)
    VALUES (${journeyId}, ${projectId}, ${file.name}, ${file.description ?? null}, ${file.status ?? "draft"},
            ${file.trigger.type}, ${file.trigger.event_name ?? null})`;
  if (file.audience !== undefined && file.audience !== null) {
    await sql`INSERT INTO journey_audiences (journey_id, audience) VALUES (${journeyId}, ${jsonParameter(sql, file.audience)})`;
  }
  await sql`
    INSERT INTO journey_nodes (id, journey_id, type, delay_duration, delay_duration_unit, delay_delivery_option,
                               delay_property, delay_property_type, delay_preferred_delivery_time, conditions, title)
    SELECT id, ${journeyId}, type, delay_duration, delay_duration_unit, delay_delivery_option,
           delay_property, delay_property_type, delay_preferred_delivery_time, conditions, title
      FROM jsonb_to_recordset(${jsonParameter(sql, nodeRows)}) AS r (
        id integer, type text, delay_duration float8, delay_duration_unit text, delay_delivery_option float8,
        delay_property jsonb, delay_property_type jsonb, delay_preferred_delivery_time jsonb, conditions jsonb, title text)`;
  await sql`
    INSERT INTO journey_edges (journey_id, from_node_id, to_node_id, branch_index)
    SELECT ${journeyId}, from_node_id, to_node_id, branch_index
      FROM jsonb_to_recordset(${jsonParameter(sql, edgeRows)}) AS r (from_node_id integer, to_node_id integer, branch_index integer)`;
  await sql`
    INSERT INTO messages (id, node_id, from_address, reply_to)
    SELECT id, node_id, from_address, reply_to
      FROM jsonb_to_recordset(${jsonParameter(sql, messageRows)}) AS r (id integer, node_id integer, from_address text, reply_to text)`;
  await sql`
    INSERT INTO message_contents (id, message_id, locale, is_default, subject, preheader_text)
    SELECT id, message_id, locale, is_default, subject, preheader_text
      FROM jsonb_to_recordset(${jsonParameter(sql, contentRows)}) AS r (
        id integer, message_id integer, locale text, is_default boolean, subject text, preheader_text text)`;
  await sql`
    INSERT INTO message_content_bodies (content_id, html, text)
    SELECT content_id, html, text
      FROM jsonb_to_recordset(${jsonParameter(sql, bodyRows)}) AS r (content_id integer, html text, text text)`;
  await insertJourneyDocument(sql, journeyId);
  return journeyId;
}

/** A Message resource (api.md "Message") built from `messages AS m`: metadata only, never a body. */
function messageObject(sql: Db) {
  return sql`json_build_object(
    'id', m.id,
    'from', m.from_address,
    'reply_to', m.reply_to,
    'contents', (SELECT coalesce(json_agg(json_build_object(
                          'id', c.id, 'locale', c.locale, 'is_default', c.is_default,
                          'subject', c.subject, 'preheader_text', c.preheader_text)
                        ORDER BY c.is_default DESC, c.locale COLLATE "C" NULLS LAST, c.id), '[]')
                   FROM message_contents AS c
                  WHERE c.message_id = m.id))`;
}

/**
 * Builds the JSON of a journey's graph (nodes, edges) and of its messages list, once, from the
 * rows just written. A graph never changes after import, and building this JSON is most of the
 * cost of a read (docs/journeys.md), so reads send it as stored. It is stored as JavaScript
 * writes it, without the spaces Postgres puts in.
 */
async function insertJourneyDocument(sql: Db, journeyId: number): Promise<void> {
  const [built] = await sql<JourneyDocument[]>`
    SELECT (SELECT coalesce(json_agg(CASE
               WHEN n.type = 'delay' THEN json_build_object('id', n.id, 'type', n.type, 'delay', json_build_object(
                 'duration', n.delay_duration,
                 'duration_unit', n.delay_duration_unit,
                 'delivery_option', n.delay_delivery_option,
                 'delay_property', n.delay_property,
                 'property_type', n.delay_property_type,
                 'preferred_delivery_time', n.delay_preferred_delivery_time))
               WHEN n.type = 'branch' THEN json_build_object('id', n.id, 'type', n.type, 'conditions', n.conditions)
               WHEN m.id IS NOT NULL THEN json_build_object('id', n.id, 'type', n.type, 'title', n.title, 'message', ${messageObject(sql)})
               ELSE json_build_object('id', n.id, 'type', n.type)
             END ORDER BY n.id), '[]')
              FROM journey_nodes AS n
              LEFT JOIN messages AS m ON m.node_id = n.id
             WHERE n.journey_id = ${journeyId}) AS nodes,
           (SELECT coalesce(json_agg(CASE
               WHEN e.branch_index IS NULL THEN json_build_object('from', e.from_node_id, 'to', e.to_node_id)
               ELSE json_build_object('from', e.from_node_id, 'to', e.to_node_id, 'branch_index', e.branch_index)
             END ORDER BY e.from_node_id, e.branch_index, e.to_node_id, e.id), '[]')
              FROM journey_edges AS e
             WHERE e.journey_id = ${journeyId}) AS edges,
           (SELECT coalesce(json_agg(${messageObject(sql)} ORDER BY n.id), '[]')
              FROM journey_nodes AS n
              JOIN messages AS m ON m.node_id = n.id
             WHERE n.journey_id = ${journeyId}) AS messages`;
  const { nodes, edges, messages } = built as JourneyDocument;
  // Sent as text: a json parameter would be encoded a second time, and jsonb would reorder keys.
  await sql`
    INSERT INTO journey_documents (journey_id, nodes, edges, messages)
    VALUES (${journeyId}, ${JSON.stringify(nodes)}::text::json, ${JSON.stringify(edges)}::text::json,
            ${JSON.stringify(messages)}::text::json)`;
}

/**
 * The Journey resource of api.md with its whole graph, as JSON text, or null when the project
 * has no such journey. One statement, whatever the size of the journey; the text goes to the
 * client as is, without being parsed and serialized again.
 */
export async function journeyJson(sql: Db, projectId: number, journeyId: number): Promise<string | null> {
  const [row] = await sql<{ journey: string }[]>`
    SELECT json_build_object(
      'id', j.id,
      'name', j.name,
      'description', j.description,
      'status', j.status,
      'trigger', CASE WHEN j.trigger_event_name IS NULL THEN json_build_object('type', j.trigger_type)
                      ELSE json_build_object('type', j.trigger_type, 'event_name', j.trigger_event_name) END,
      'nodes', d.nodes,
      'edges', d.edges,
      -- The text of JavaScript's toISOString(), as the other resources give, whatever the session time zone.
      'created_at', to_char(j.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'updated_at', to_char(j.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
    )::text AS journey
      FROM journeys AS j
      JOIN journey_documents AS d ON d.journey_id = j.id
     WHERE j.id = ${journeyId} AND j.project_id = ${projectId}`;
  return row?.journey ?? null;
}

/**
 * A page of the project's journeys in id order (of one status, or all), without their graphs:
 * at most `limit` after `afterId`. The journeys of a project are few (imported by an operator),
 * so its index and a filter on status serve any page.
 */
export async function journeysAfter(
  sql: Db,
  projectId: number,
  { afterId, limit, status }: { afterId: number; limit: number; status: JourneyStatus | null },
): Promise<JourneyListItem[]> {
  return sql<JourneyListItem[]>`
    SELECT j.id, j.name, j.description, j.status,
           CASE WHEN j.trigger_event_name IS NULL THEN json_build_object('type', j.trigger_type)
                ELSE json_build_object('type', j.trigger_type, 'event_name', j.trigger_event_name) END AS trigger,
           to_char(j.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
           to_char(j.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at
      FROM journeys AS j
     WHERE j.project_id = ${projectId} AND j.id > ${afterId}
       AND (${status}::text IS NULL OR j.status = ${status})
     ORDER BY j.id
     LIMIT ${limit}`;
}

/**
 * The Message resources of a journey's message nodes, by node id, as JSON text; null when the
 * project has no such journey. One statement, as for `journeyJson`.
 */
export async function journeyMessagesJson(sql: Db, projectId: number, journeyId: number): Promise<string | null> {
  const [row] = await sql<{ messages: string }[]>`
    SELECT d.messages::text AS messages
      FROM journeys AS j
      JOIN journey_documents AS d ON d.journey_id = j.id
     WHERE j.id = ${journeyId} AND j.project_id = ${projectId}`;
  return row?.messages ?? null;
}

export interface JourneySummary {
  id: number;
  name: string;
  status: JourneyStatus;
}

export async function allJourneysOfProject(sql: Db, projectId: number): Promise<JourneySummary[]> {
  return sql<JourneySummary[]>`SELECT id, name, status FROM journeys WHERE project_id = ${projectId} ORDER BY id`;
}

/** The journey's project and status, locked until the transaction ends; null when there is no such journey. */
export async function lockJourney(
  sql: Db,
  journeyId: number,
): Promise<{ projectId: number; status: JourneyStatus } | null> {
  const [row] = await sql<{ projectId: number; status: JourneyStatus }[]>`
    SELECT project_id AS "projectId", status FROM journeys WHERE id = ${journeyId} FOR UPDATE`;
  return row ?? null;
}

/** After lockJourney, so that statement_timestamp() is after the lock was awaited (see saveTopic). */
export async function updateJourneyStatus(sql: Db, journeyId: number, status: JourneyStatus): Promise<void> {
  await sql`UPDATE journeys SET status = ${status}, updated_at = statement_timestamp() WHERE id = ${journeyId}`;
}
