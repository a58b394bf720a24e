import type { TrackBody } from "../events/events";
import type { IdentifyBody } from "../profiles/identify";
import type { EditTagsBody, EditUserBody, ReidentifyBody, UserRefBody } from "../profiles/profile-requests";
import type { BatchBody } from "./batch";

// The request bodies the OpenAPI document shows: the very types the gateway validates with, plus
// the credential fields that the gateway reads before validating.

/** Vero's users API takes its credential in the body too, instead of the query string. */
interface IdentifyCredentialFields {
  /** The identify auth token, when not in the query string. */
  auth_token?: string;
  /** Vero's newer name for the same credential. */
  tracking_api_key?: string;
}

/** The bodies of Vero's users API as sent, credential included. */
export type IdentifyRequest = IdentifyBody & IdentifyCredentialFields;
export type EditUserRequest = EditUserBody & IdentifyCredentialFields;
export type EditTagsRequest = EditTagsBody & IdentifyCredentialFields;
export type UserRefRequest = UserRefBody & IdentifyCredentialFields;
export type ReidentifyRequest = ReidentifyBody & IdentifyCredentialFields;
export type TrackRequest = TrackBody & IdentifyCredentialFields;
/** A JSON batch; an NDJSON batch's credential can only be in the query string. */
export type BatchRequest = BatchBody & IdentifyCredentialFields;
