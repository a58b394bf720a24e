import type { Db } from "./connect";

export interface Project {
  id: number;
  name: string;
}

export async function createProject(sql: Db, name: string): Promise<Project> {
  const [project] = await sql<Project[]>`INSERT INTO projects (name) VALUES (${name}) RETURNING id, name`;
  return project as Project;
}

export async function projectExists(sql: Db, id: number): Promise<boolean> {
  const rows = await sql`SELECT 1 FROM projects WHERE id = ${id}`;
  return rows.length > 0;
}
