import { createCredential, listCredentials, projectExists, revokeCredential, rotateCredential, type Sql } from "@cm/db";
import { isPermission, PERMISSIONS, type CredentialKind, type Permission } from "@cm/domain";
import { CliError } from "../cli-error";

/** How long a rotated credential keeps working by default: a day for integrations to switch. */
export const DEFAULT_GRACE_SECONDS = 86_400;

/** The field a new credential of each kind is printed under, as `project create` prints them. */
const FIELD: Record<CredentialKind, string> = { api_key: "api_key", auth_token: "auth_token" };

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

async function existingProject(sql: Sql, projectId: number): Promise<void> {
  if (!(await projectExists(sql, projectId))) throw new CliError(`project ${projectId} does not exist`);
}

export async function createKeyCommand(sql: Sql, projectId: number, permissions: Permission[]) {
  await existingProject(sql, projectId);
  const apiKey = await createCredential(sql, projectId, "api_key", permissions);
  return { api_key: apiKey, permissions };
}

/** `token create`: one more identify token of the project (its permissions are identify's). */
export async function createTokenCommand(sql: Sql, projectId: number) {
  await existingProject(sql, projectId);
  return { auth_token: await createCredential(sql, projectId, "auth_token") };
}

/** `key list`, `token list`: the project's credentials of that kind, secrets never shown (they are not stored). */
export async function listCredentialsCommand(sql: Sql, projectId: number, kind: CredentialKind) {
  await existingProject(sql, projectId);
  const now = Date.now();
  return {
    credentials: (await listCredentials(sql, projectId, kind)).map((credential) => ({
      id: credential.id,
      kind: credential.kind,
      permissions: credential.permissions,
      created_at: credential.createdAt.toISOString(),
      revoked_at: credential.revokedAt?.toISOString() ?? null,
      expires_at: credential.expiresAt?.toISOString() ?? null,
      working: credential.revokedAt === null && (credential.expiresAt === null || credential.expiresAt.getTime() > now),
    })),
  };
}

/** `key revoke`, `token revoke`: stops it at once (a gateway's cached verdict, within 30 s). */
export async function revokeCredentialCommand(sql: Sql, id: string, kind: CredentialKind) {
  if (!(await revokeCredential(sql, id, kind))) throw new CliError(`no working ${kind} with id ${id}`);
  return { revoked: id };
}

/** `key rotate`, `token rotate`: a new credential like it; the old one works `graceSeconds` more. */
export async function rotateCredentialCommand(sql: Sql, id: string, kind: CredentialKind, graceSeconds: number) {
  const rotated = await rotateCredential(sql, id, kind, graceSeconds);
  if (rotated === null) throw new CliError(`no working ${kind} with id ${id}`);
  return {
    [FIELD[kind]]: rotated.token,
    replaces: id,
    replaced_works_until: rotated.replacedExpiresAt.toISOString(),
  };
}
