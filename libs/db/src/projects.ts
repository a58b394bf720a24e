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

/** The oldest project of that name (names are not unique), or null. */
export async function findProjectByName(sql: Db, name: string): Promise<Project | null> {
  const [project] = await sql<Project[]>`SELECT id, name FROM projects WHERE name = ${name} ORDER BY id LIMIT 1`;
  return project ?? null;
}
