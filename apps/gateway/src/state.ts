import type { Credential } from "@cm/db";
import type { RevisionResult } from "@cm/domain";

// What middleware puts in ctx.state, by the middleware that sets it. Routers are typed with the
// state their middleware guarantees, so a handler reads only what was set before it.

/** Set on first use by requestIdOf (middleware/request-log.ts). */
export interface RequestState {
  requestId?: string;
}

/** Set by nameRevision on every request of the API router. */
export interface RevisionState {
  revision: RevisionResult;
}

/** Set by requireApiKey once the key is verified and allowed. */
export interface AuthState {
  credential: Credential;
}

/** The identify router: its routes authenticate in the handler, after reading the body. */
export type IdentifyState = RequestState;

/** The key-authenticated API router. */
export type ApiState = RequestState & RevisionState;
