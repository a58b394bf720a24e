import { createHmac } from "node:crypto";
import { RefusedInput } from "../kernel/problems";
import { profileIdOf } from "./identify";
import type { ProfileOperation } from "./profile-operations";

/**
 * The key a profile's rows, links, erasures and events are stored under: a keyed hash of the
 * user's id (HMAC-SHA256 with the project's profile key secret, its first 128 bits in base64url),
 * never the id itself. An erasure must keep the key, so that an operation stamped before it and
 * arriving later is erased too; the id (an email for a user known by email alone) it must not keep
 * (docs/profiles.md "Delete"). Migration 015 computes the same in SQL.
 */
export function storedProfileKey(secret: Uint8Array, id: string): string {
  return `h:${createHmac("sha256", secret).update(id).digest().subarray(0, 16).toString("base64url")}`;
}

/** The stored key of a user of a project (storedProfileKey with that project's secret). */
export type ProfileKeyOf = (projectId: number, id: string) => string;

/** The stored keys of the users of the projects whose secrets these are; another project's throw. */
export function profileKeysWith(secrets: ReadonlyMap<number, Uint8Array>): ProfileKeyOf {
  return (projectId, id) => {
    const secret = secrets.get(projectId);
    if (secret === undefined) throw new RefusedInput(`project ${projectId} does not exist`);
    return storedProfileKey(secret, id);
  };
}

type Unkeyed<Operation> = Operation extends ProfileOperation ? Omit<Operation, "key" | "newKey"> : never;

/**
 * An operation as a job holds it: named by its users' ids. Jobs of payload version 1 name the
 * profiles by `key` and a reidentify's new one by `newKey` too ("i:<id>", which workers no longer
 * store under); version 2 carries neither.
 */
export type UnkeyedProfileOperation = Unkeyed<ProfileOperation>;

/**
 * A queued operation as the workers apply it: `key` (and a reidentify's `newKey`) the stored keys
 * of its ids. Jobs queued before migration 007 name a user known by email alone by its key alone,
 * "e:<email>" with no id; the id is the same.
 */
export function withStoredKeys(operation: UnkeyedProfileOperation, keyOf: ProfileKeyOf): ProfileOperation {
  const id = operation.id ?? profileIdOf(operation as ProfileOperation);
  const key = keyOf(operation.projectId, id);
  return operation.op === "reidentify"
    ? { ...operation, key, id, newKey: keyOf(operation.projectId, operation.newId) }
    : { ...operation, key, id };
}
