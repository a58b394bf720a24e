import {
  createApiKey,
  createAuthToken,
  listProjectCredentials,
  NotFound,
  revokeProjectCredential,
  rotateProjectCredential,
} from "@cm/app";
import type { Sql } from "@cm/db";
import { isPermission, PERMISSIONS, type ApiKey, type CredentialKind, type Permission } from "@cm/domain";
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

/** The ctl's words for what a credential use case could not do. */
async function worded<T>(work: Promise<T>, notFound: string): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (error instanceof NotFound) throw new CliError(notFound);
    throw error;
  }
}

const noProject = (projectId: number) => `project ${projectId} does not exist`;
const noWorking = (kind: CredentialKind, id: string) => `no working ${kind} with id ${id}`;

/** `key create`: an operator may give any permission. */
export async function createKeyCommand(sql: Sql, projectId: number, permissions: Permission[]) {
  const key = await worded(createApiKey({ sql }, projectId, permissions, PERMISSIONS), noProject(projectId));
  return { api_key: key.api_key, permissions };
}

/** `token create`: one more identify token of the project (its permissions are identify's). */
export async function createTokenCommand(sql: Sql, projectId: number) {
  return { auth_token: await worded(createAuthToken({ sql }, projectId), noProject(projectId)) };
}

/** `key list`, `token list`: the project's credentials of that kind, secrets never shown (they are not stored). */
export async function listCredentialsCommand(
  sql: Sql,
  projectId: number,
  kind: CredentialKind,
): Promise<{ credentials: (ApiKey & { kind: CredentialKind })[] }> {
  const credentials = await worded(listProjectCredentials({ sql }, projectId, kind), noProject(projectId));
  return { credentials: credentials.map((credential) => ({ ...credential, kind })) };
}

/** `key revoke`, `token revoke`: stops it at once (a gateway's cached verdict, within 30 s). */
export async function revokeCredentialCommand(sql: Sql, id: string, kind: CredentialKind) {
  await worded(revokeProjectCredential({ sql }, { id, kind, projectId: null }), noWorking(kind, id));
  return { revoked: id };
}

/** `key rotate`, `token rotate`: a new credential like it; the old one works `graceSeconds` more. */
export async function rotateCredentialCommand(sql: Sql, id: string, kind: CredentialKind, graceSeconds: number) {
  const rotated = await worded(rotateProjectCredential({ sql }, { id, kind }, graceSeconds), noWorking(kind, id));
  return {
    [FIELD[kind]]: rotated.token,
    replaces: id,
    replaced_works_until: rotated.replacedExpiresAt.toISOString(),
  };
}
