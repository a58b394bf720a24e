import {
  formatToken,
  hashSecret,
  newSecret,
  parseToken,
  secretMatches,
  type CredentialKind,
  type Permission,
} from "@cm/domain";
import type { Db, Sql } from "./connect";

export interface Credential {
  /** Its row's id, the token's middle part: what a revocation names. */
  id: string;
  projectId: number;
  kind: CredentialKind;
  permissions: Permission[];
  /** The project's secret of its stored profile keys (libs/domain storedProfileKey). */
  profileKeySecret: Buffer;
}

/** A credential as an operator may see it: never its secret. */
export interface CredentialSummary {
  id: string;
  kind: CredentialKind;
  permissions: Permission[];
  createdAt: Date;
  /** When it stops working: revoked, or the end of a rotation's grace period. */
  revokedAt: Date | null;
  expiresAt: Date | null;
}

const SUMMARY_COLUMNS = `id::text AS id, kind, permissions, created_at AS "createdAt", revoked_at AS "revokedAt",
  expires_at AS "expiresAt"`;

/** Creates a credential and returns the token; the token is never stored and cannot be shown again. */
export async function createCredential(
  sql: Db,
  projectId: number,
  kind: CredentialKind,
  permissions: readonly Permission[] = [],
): Promise<string> {
  return (await issueCredential(sql, projectId, kind, permissions)).token;
}

/** createCredential, with the new credential as a list shows it. */
export async function issueCredential(
  sql: Db,
  projectId: number,
  kind: CredentialKind,
  permissions: readonly Permission[] = [],
): Promise<{ token: string; credential: CredentialSummary }> {
  const secret = newSecret();
  const [row] = await sql<CredentialSummary[]>`
    INSERT INTO credentials (project_id, kind, secret_hash, permissions)
    VALUES (${projectId}, ${kind}, ${hashSecret(secret)}, ${sql.array(permissions as Permission[])})
    RETURNING ${sql.unsafe(SUMMARY_COLUMNS)}`;
  const credential = row as CredentialSummary;
  return { token: formatToken(kind, credential.id, secret), credential };
}

/** The credential a token stands for, or null when the token is malformed, unknown or revoked. */
export async function findCredential(sql: Db, token: string): Promise<Credential | null> {
  const parsed = parseToken(token);
  if (parsed === null) return null;
  const [row] = await sql<
    { project_id: number; secret_hash: Buffer; permissions: Permission[]; profile_key_secret: Buffer }[]
  >`
    SELECT c.project_id, c.secret_hash, c.permissions, p.profile_key_secret
      FROM credentials AS c JOIN projects AS p ON p.id = c.project_id
     WHERE c.id = ${parsed.id} AND c.kind = ${parsed.kind} AND c.revoked_at IS NULL
       AND (c.expires_at IS NULL OR c.expires_at > now())`;
  if (row === undefined || !secretMatches(parsed.secret, row.secret_hash)) return null;
  return {
    id: parsed.id,
    projectId: row.project_id,
    kind: parsed.kind,
    permissions: row.permissions,
    profileKeySecret: row.profile_key_secret,
  };
}

/** Whether the credential `id` is set to expire (rotated, in its grace): false for one without an expiry. */
export async function credentialExpires(sql: Db, id: string): Promise<boolean> {
  const [row] = await sql<{ expires: boolean }[]>`
    SELECT expires_at IS NOT NULL AS expires FROM credentials WHERE id = ${id}`;
  return row?.expires ?? false;
}

/** A project's credentials of one kind, oldest first, those revoked or expired included. */
export async function listCredentials(sql: Db, projectId: number, kind: CredentialKind): Promise<CredentialSummary[]> {
  return sql<CredentialSummary[]>`
    SELECT ${sql.unsafe(SUMMARY_COLUMNS)}
      FROM credentials
     WHERE project_id = ${projectId} AND kind = ${kind}
     -- credentials.id: a bare "id" is the text column above, which put key 10 before key 9
     ORDER BY credentials.id`;
}

/**
 * Stops a credential at once; false when there is no such credential of that kind (of the project,
 * when one is named), or it stopped already.
 */
export async function revokeCredential(
  sql: Db,
  id: string,
  kind: CredentialKind,
  projectId: number | null = null,
): Promise<boolean> {
  const rows = await sql`
    UPDATE credentials SET revoked_at = now()
     WHERE id = ${id} AND kind = ${kind} AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
       ${projectId === null ? sql`` : sql`AND project_id = ${projectId}`}
    RETURNING 1`;
  return rows.length > 0;
}

/**
 * A new credential of the same project, kind and permissions; the old one keeps working for
 * `graceSeconds` more (never longer than it would have). Returns the new token and when the old
 * one stops, or null when there is no working credential of that id and kind.
 */
export async function rotateCredential(
  sql: Sql,
  id: string,
  kind: CredentialKind,
  graceSeconds: number,
): Promise<{ token: string; replacedExpiresAt: Date } | null> {
  return sql.begin(async (tx) => {
    const [old] = await tx<{ project_id: number; permissions: Permission[]; expires_at: Date }[]>`
      UPDATE credentials
         SET expires_at = least(coalesce(expires_at, 'infinity'), now() + make_interval(secs => ${graceSeconds}))
       WHERE id = ${id} AND kind = ${kind} AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
      RETURNING project_id, permissions, expires_at`;
    if (old === undefined) return null;
    return {
      token: await createCredential(tx, old.project_id, kind, old.permissions),
      replacedExpiresAt: old.expires_at,
    };
  });
}
