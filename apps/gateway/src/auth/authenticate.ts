import type { Credential } from "@cm/db";
import type { Permission } from "@cm/domain";
import type Koa from "koa";
import { ApiError } from "../errors/api-error";
import type { PoolShares } from "../pool-shares";
import { enforceRateLimit } from "../rate-limit/enforce";
import type { RateLimiter } from "../rate-limit/rate-limiter";
import type { AuthState } from "../state";
import { CredentialStoreUnavailable, type CredentialCache } from "./credential-cache";
import { IDENTIFY_CREDENTIAL_FIELDS } from "./repeated-credentials";

/** `Authorization: <key>` or `Authorization: Bearer <key>`. */
export function apiKeyFromHeader(header: string | undefined): string | null {
  if (header === undefined) return null;
  const key = header.replace(/^Bearer\s+/i, "").trim();
  return key === "" ? null : key;
}

/**
 * API-key routes: 401 without a valid key, 403 without the permission, 503 when keys cannot be
 * checked, 429 past the project's rate limit. The operation then runs within its project's share
 * of the pool.
 */
export function requireApiKey(
  cache: CredentialCache,
  permission: Permission,
  limiter: RateLimiter,
  shares: PoolShares,
): Koa.Middleware<AuthState> {
  return async (ctx, next) => {
    const key = apiKeyFromHeader(ctx.get("authorization") || undefined);
    if (key === null) throw ApiError.unauthorized();
    let credential: Credential | null;
    try {
      credential = await cache.verify(key);
    } catch (error) {
      if (error instanceof CredentialStoreUnavailable) throw ApiError.unavailable();
      throw error;
    }
    if (credential === null || credential.kind !== "api_key") throw ApiError.unauthorized();
    if (!credential.permissions.includes(permission)) throw ApiError.forbidden();
    await enforceRateLimit(ctx, limiter, credential.projectId);
    ctx.state.credential = credential;
    await shares.run(credential.projectId, next);
  };
}

/** The one credential all the values given agree on: null when none is given, or when those given disagree. */
export function agreedCredential(given: readonly unknown[]): string | null {
  const [first] = given;
  if (typeof first !== "string" || first === "" || given.some((value) => value !== first)) return null;
  return first;
}

/** The values a parsed body gives the credential `fields` at its top level. */
export function bodyCredentials(body: unknown, fields: readonly string[]): unknown[] {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return [];
  return fields.filter((field) => Object.hasOwn(body, field)).map((field) => (body as Record<string, unknown>)[field]);
}

/** The identify credentials of a query string (URLSearchParams reads them without building koa's whole parsed query). */
export function queryCredentials(querystring: string): string[] {
  const query = new URLSearchParams(querystring);
  return IDENTIFY_CREDENTIAL_FIELDS.flatMap((field) => query.getAll(field));
}

/**
 * The identify credential of Vero's users API, wherever the client put it: the query string, or
 * a top-level field of the body (JSON or form). Null when none is given, or when those given
 * disagree. `repeated`: the values of credential fields the body named more than once
 * (repeatedBodyCredentials), which its parsed form no longer shows.
 */
export function identifyCredential(querystring: string, body: unknown, repeated: unknown[] = []): string | null {
  return agreedCredential([
    ...repeated,
    ...queryCredentials(querystring),
    ...bodyCredentials(body, IDENTIFY_CREDENTIAL_FIELDS),
  ]);
}

/**
 * The user name of `Authorization: Basic …`, where Segment's and RudderStack's SDKs put their
 * write key (the password is empty); null for any other authorization.
 */
export function basicAuthUser(header: string): string | null {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (match === null) return null;
  const decoded = Buffer.from(match[1] as string, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  return colon === -1 ? decoded : decoded.slice(0, colon);
}

/** A token this request verified already, and its verdict. */
export interface VerifiedToken {
  token: string;
  credential: Credential;
}

/**
 * Identify: 401 without a valid auth token, given as `given` (every value the request gave it,
 * which must agree). An unverifiable token is our failure, a 500. `verified`: a token checked
 * before the body was read.
 */
export async function authenticateIdentify(
  cache: CredentialCache,
  given: readonly unknown[],
  verified?: VerifiedToken,
): Promise<VerifiedToken> {
  const token = agreedCredential(given);
  if (token === null) throw ApiError.unauthorized();
  if (token === verified?.token) return verified;
  const credential = await cache.verify(token);
  if (credential === null || credential.kind !== "auth_token") throw ApiError.unauthorized();
  return { token, credential };
}
