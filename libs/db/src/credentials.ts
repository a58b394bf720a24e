import {
  formatToken,
  hashSecret,
  newSecret,
  parseToken,
  secretMatches,
  type CredentialKind,
  type Permission,
} from "@cm/domain";
import type { Db } from "./connect";

export interface Credential {
  projectId: number;
  kind: CredentialKind;
  permissions: Permission[];
  /** The project's secret of its stored profile keys (libs/domain storedProfileKey). */
  profileKeySecret: Buffer;
}

/** Creates a credential and returns the token; the token is never stored and cannot be shown again. */
export async function createCredential(
  sql: Db,
  projectId: number,
  kind: CredentialKind,
  permissions: readonly Permission[] = [],
): Promise<string> {
  const secret = newSecret();
  const [row] = await sql<{ id: string }[]>`
    INSERT INTO credentials (project_id, kind, secret_hash, permissions)
    VALUES (${projectId}, ${kind}, ${hashSecret(secret)}, ${sql.array(permissions as Permission[])})
    RETURNING id`;
  return formatToken(kind, (row as { id: string }).id, secret);
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
     WHERE c.id = ${parsed.id} AND c.kind = ${parsed.kind} AND c.revoked_at IS NULL`;
  if (row === undefined || !secretMatches(parsed.secret, row.secret_hash)) return null;
  return {
    projectId: row.project_id,
    kind: parsed.kind,
    permissions: row.permissions,
    profileKeySecret: row.profile_key_secret,
  };
}
