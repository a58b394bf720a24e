import {
  createCredential,
  credentialExpires,
  issueCredential,
  listCredentials,
  projectExists,
  revokeCredential,
  rotateCredential,
  type CredentialSummary,
} from "@cm/db";
import { permissionsNotHeld, type ApiKey, type CredentialKind, type NewApiKey, type Permission } from "@cm/domain";
import type { Store } from "../deps";
import { KeyBeingRotatedOut, NotFound, PermissionsNotHeld } from "../errors";

// The project's credentials, managed by the API (an API key's keys) and by the ctl (an operator's,
// identify tokens too) through the same rules.

async function existingProject(deps: Store, projectId: number): Promise<void> {
  if (!(await projectExists(deps.sql, projectId))) throw new NotFound(`project ${projectId}`);
}

/** A credential as the key list shows it: its secret is not stored, so never shown. */
function credentialResource(credential: CredentialSummary, now: number): ApiKey {
  return {
    id: credential.id,
    permissions: credential.permissions,
    created_at: credential.createdAt.toISOString(),
    expires_at: credential.expiresAt?.toISOString() ?? null,
    revoked_at: credential.revokedAt?.toISOString() ?? null,
    working: credential.revokedAt === null && (credential.expiresAt === null || credential.expiresAt.getTime() > now),
  };
}

/**
 * A new API key of the project, shown this once. `grantor`: the permissions of whoever asks (a
 * key's own; every one for an operator): a key never gives more than it holds (PermissionsNotHeld).
 */
export async function createApiKey(
  deps: Store,
  projectId: number,
  permissions: readonly Permission[],
  grantor: readonly Permission[],
): Promise<NewApiKey> {
  const lacking = permissionsNotHeld(grantor, permissions);
  if (lacking.length > 0) throw new PermissionsNotHeld(lacking);
  await existingProject(deps, projectId);
  const { token, credential } = await issueCredential(deps.sql, projectId, "api_key", permissions);
  return { ...credentialResource(credential, Date.now()), api_key: token };
}

/**
 * Refuses a key that is being rotated out (KeyBeingRotatedOut) the management of keys: a leaked
 * key, rotated, could otherwise make itself a successor that never expires within its grace, or
 * revoke the key that replaced it.
 */
export async function requireKeyManager(deps: Store, credentialId: string): Promise<void> {
  if (await credentialExpires(deps.sql, credentialId)) throw new KeyBeingRotatedOut();
}

/** One more identify token of the project (its permissions are identify's), shown this once. */
export async function createAuthToken(deps: Store, projectId: number): Promise<string> {
  await existingProject(deps, projectId);
  return createCredential(deps.sql, projectId, "auth_token");
}

/** The project's credentials of one kind, oldest first, revoked and expired ones included. */
export async function listProjectCredentials(deps: Store, projectId: number, kind: CredentialKind): Promise<ApiKey[]> {
  await existingProject(deps, projectId);
  const now = Date.now();
  return (await listCredentials(deps.sql, projectId, kind)).map((credential) => credentialResource(credential, now));
}

/**
 * Stops a working credential at once (a gateway's cached verdict within 30 s); NotFound when there
 * is none of that id and kind working, of the project when one is named.
 */
export async function revokeProjectCredential(
  deps: Store,
  target: { id: string; kind: CredentialKind; projectId: number | null },
): Promise<void> {
  if (!(await revokeCredential(deps.sql, target.id, target.kind, target.projectId))) {
    throw new NotFound(`working ${target.kind} ${target.id}`);
  }
}

/** A new credential like the working one `id`, which works `graceSeconds` more; NotFound when there is none. */
export async function rotateProjectCredential(
  deps: Store,
  target: { id: string; kind: CredentialKind },
  graceSeconds: number,
): Promise<{ token: string; replacedExpiresAt: Date }> {
  const rotated = await rotateCredential(deps.sql, target.id, target.kind, graceSeconds);
  if (rotated === null) throw new NotFound(`working ${target.kind} ${target.id}`);
  return rotated;
}
