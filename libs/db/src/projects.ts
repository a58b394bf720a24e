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

/** The projects' secrets of their stored profile keys (libs/domain storedProfileKey), by id; a project that does not exist has none. */
export async function profileKeySecrets(sql: Db, projectIds: readonly number[]): Promise<Map<number, Buffer>> {
  const rows = await sql<{ id: number; profile_key_secret: Buffer }[]>`
    SELECT id, profile_key_secret FROM projects WHERE id = ANY(${projectIds as number[]}::integer[])`;
  return new Map(rows.map((row) => [row.id, row.profile_key_secret]));
}
