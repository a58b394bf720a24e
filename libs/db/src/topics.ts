import type { TopicStatus } from "@cm/domain";
import type { Db } from "./connect";

export interface TopicRow {
  id: number;
  project_id: number;
  name: string;
  description: string | null;
  default_status: TopicStatus;
  created_at: Date;
  updated_at: Date;
}

export interface NewTopic {
  projectId: number;
  name: string;
  description: string | null;
  defaultStatus: TopicStatus;
}

/** Throws postgres error 23505 (unique_violation) when the project has the name already, ignoring case. */
export async function insertTopic(sql: Db, topic: NewTopic): Promise<TopicRow> {
  const [row] = await sql<TopicRow[]>`
    INSERT INTO topics (project_id, name, description, default_status)
    VALUES (${topic.projectId}, ${topic.name}, ${topic.description}, ${topic.defaultStatus})
    RETURNING *`;
  return row as TopicRow;
}

export async function allTopicsOfProject(sql: Db, projectId: number): Promise<TopicRow[]> {
  return sql<TopicRow[]>`SELECT * FROM topics WHERE project_id = ${projectId} ORDER BY id`;
}
