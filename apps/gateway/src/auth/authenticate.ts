import type { Credential } from "@cm/db";
import type { Permission } from "@cm/domain";
import type Koa from "koa";
import { ApiError } from "../api-error";
import { CredentialStoreUnavailable, type CredentialCache } from "./credential-cache";

export interface AuthState {
  credential: Credential;
}

/** `Authorization: <key>` or `Authorization: Bearer <key>`. */
export function apiKeyFromHeader(header: string | undefined): string | null {
  if (header === undefined) return null;
  const key = header.replace(/^Bearer\s+/i, "").trim();
  return key === "" ? null : key;
}

/** API-key routes: 401 without a valid key, 403 without the permission, 503 when keys cannot be checked. */
export function requireApiKey(cache: CredentialCache, permission: Permission): Koa.Middleware {
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
    ctx.state.credential = credential;
    await next();
  };
}

/** Identify: the `auth_token` query parameter. An unverifiable token is our failure, a 500. */
export function requireAuthToken(cache: CredentialCache): Koa.Middleware {
  return async (ctx, next) => {
    // URLSearchParams reads one parameter without building koa's whole parsed-query object.
    const token = new URLSearchParams(ctx.querystring).get("auth_token");
    if (token === null || token === "") throw ApiError.unauthorized();
    const credential = await cache.verify(token);
    if (credential === null || credential.kind !== "auth_token") throw ApiError.unauthorized();
    ctx.state.credential = credential;
    await next();
  };
}
