import { createCredential, createProject, type Sql } from "@cm/db";
import { PERMISSIONS } from "@cm/domain";

/** A project with one identify auth token and one API key holding every permission. */
export async function createProjectCommand(sql: Sql, name: string) {
  return sql.begin(async (tx) => {
    const project = await createProject(tx, name);
    const authToken = await createCredential(tx, project.id, "auth_token");
    const apiKey = await createCredential(tx, project.id, "api_key", PERMISSIONS);
    return { project, auth_token: authToken, api_key: apiKey };
  });
}
