import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

export type CredentialKind = "auth_token" | "api_key";

const PREFIX: Record<CredentialKind, string> = { auth_token: "cmt", api_key: "cmk" };
const TOKEN_SHAPE = /^(cmt|cmk)_([1-9][0-9]{0,17})_([A-Za-z0-9_-]{43})$/;

/**
 * A credential is "<kind prefix>_<row id>_<secret>". The row id makes the lookup a primary-key
 * read; only a SHA-256 of the 256-bit random secret is stored (a slow hash adds nothing for a
 * secret of that entropy).
 */
export interface ParsedToken {
  kind: CredentialKind;
  id: string;
  secret: string;
}

export function newSecret(): string {
  return randomBytes(32).toString("base64url");
}

export function formatToken(kind: CredentialKind, id: string | number, secret: string): string {
  return `${PREFIX[kind]}_${id}_${secret}`;
}

export function parseToken(token: string): ParsedToken | null {
  const match = TOKEN_SHAPE.exec(token);
  if (match === null) return null;
  const [, prefix, id, secret] = match as unknown as [string, string, string, string];
  return { kind: prefix === "cmt" ? "auth_token" : "api_key", id, secret };
}

export function hashSecret(secret: string): Buffer {
  return createHash("sha256").update(secret).digest();
}

export function secretMatches(secret: string, storedHash: Uint8Array): boolean {
  const hash = hashSecret(secret);
  return storedHash.length === hash.length && timingSafeEqual(hash, storedHash);
}
