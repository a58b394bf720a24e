import { createCredential, projectExists, type Sql } from "@cm/db";
import { isPermission, PERMISSIONS, type Permission } from "@cm/domain";
import { CliError } from "../cli-error";

export function parsePermissions(text: string): Permission[] {
  const names = [
    ...new Set(
      text
        .split(",")
        .map((p) => p.trim())
        .filter((p) => p !== ""),
    ),
  ];
  const unknown = names.filter((name) => !isPermission(name));
  if (unknown.length > 0) {
    throw new CliError(`unknown permission ${unknown.join(", ")} (known: ${PERMISSIONS.join(", ")})`, 2);
  }
  return names as Permission[];
}

export async function createKeyCommand(sql: Sql, projectId: number, permissions: Permission[]) {
  if (!(await projectExists(sql, projectId))) throw new CliError(`project ${projectId} does not exist`);
  const apiKey = await createCredential(sql, projectId, "api_key", permissions);
  return { api_key: apiKey, permissions };
}
