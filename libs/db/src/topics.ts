import { TOPIC_FIELDS, type TopicRecord, type TopicValues } from "@cm/domain";
import type { Db } from "./connect";
import { UNIQUE_VIOLATION } from "./errors";

// A topic's values are written by TOPIC_FIELDS, each to the column of its name, and read with
// `SELECT *`: a value added in libs/domain needs its column here (a migration), not an edit.

/** A row of `topics`: the stored topic and its project. */
export interface TopicRow extends TopicRecord {
  project_id: number;
}

const NEW_TOPIC_COLUMNS = ["project_id", ...TOPIC_FIELDS] as const;

/** Throws postgres error 23505 (unique_violation) when the project has the name already, ignoring case. */
export async function insertTopic(sql: Db, projectId: number, values: TopicValues): Promise<TopicRow> {
  const [row] = await sql<TopicRow[]>`
    INSERT INTO topics ${sql({ project_id: projectId, ...values }, NEW_TOPIC_COLUMNS)}
    RETURNING *`;
  return row as TopicRow;
}

/** The name index, or a Citus node's copy of it: its name followed by the copy's shard id. */
const TOPIC_NAME_INDEX = /^topics_project_name_key(_\d+)?$/;
/** The same, quoted in an error message, which quotes it whatever the server's language. */
const TOPIC_NAME_INDEX_IN_MESSAGE = /(?<![\w$])topics_project_name_key(_\d+)?(?![\w$])/;

/**
 * The unique index topics_project_name_key refused a name the project already has, ignoring
 * case. Postgres names the index in the error's constraint field; so does a Citus node that
 * wrote its own copy of `topics` (a single node, or the coordinator's copy). A copy written on
 * a worker fails there, and the coordinator forwards only the worker's code and message, the
 * constraint field left out (Citus 13.2, remote_commands.c ReportResultError): then the message
 * names the index. The message only: the detail quotes the refused name, which is the client's.
 */
export function isDuplicateTopicName(error: unknown): boolean {
  const { code, constraint_name, message } = (error ?? {}) as {
    code?: unknown;
    constraint_name?: unknown;
    message?: unknown;
  };
  if (code !== UNIQUE_VIOLATION) return false;
  if (typeof constraint_name === "string") return TOPIC_NAME_INDEX.test(constraint_name);
  return typeof message === "string" && TOPIC_NAME_INDEX_IN_MESSAGE.test(message);
}

export async function allTopicsOfProject(sql: Db, projectId: number): Promise<TopicRow[]> {
  return sql<TopicRow[]>`SELECT * FROM topics WHERE project_id = ${projectId} ORDER BY id`;
}

/** Keyset page of a project's topics: up to `count` with an id above `afterId`, by id. */
export async function topicsAfter(sql: Db, projectId: number, afterId: number, count: number): Promise<TopicRow[]> {
  return sql<TopicRow[]>`
    SELECT * FROM topics
     WHERE project_id = ${projectId} AND id > ${afterId}
     ORDER BY id
     LIMIT ${count}`;
}

/**
 * The topic, locked until the transaction ends, or null when the project has no such topic.
 * The lock orders concurrent updates of one topic and the fan-out chunks of its default.
 */
export async function lockTopic(tx: Db, projectId: number, id: number): Promise<TopicRow | null> {
  const [row] = await tx<TopicRow[]>`
    SELECT * FROM topics WHERE id = ${id} AND project_id = ${projectId} FOR UPDATE`;
  return row ?? null;
}

/**
 * Throws like insertTopic on a duplicate name. Call it after lockTopic: statement_timestamp(),
 * not now(), so that a transaction that waited for the row lock does not stamp a time before
 * the update it waited for; not clock_timestamp(), which Citus refuses in an update of a table
 * copied to every node (docs/scaling.md).
 */
export async function saveTopic(tx: Db, id: number, values: TopicValues): Promise<TopicRow> {
  const [row] = await tx<TopicRow[]>`
    UPDATE topics
       SET ${tx(values, TOPIC_FIELDS)}, updated_at = statement_timestamp()
     WHERE id = ${id}
    RETURNING *`;
  return row as TopicRow;
}
