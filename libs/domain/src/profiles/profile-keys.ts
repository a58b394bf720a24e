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

/**
 * A queued operation as the workers apply it: `key` (and a reidentify's `newKey`) the stored keys
 * of its ids. Jobs queued before migration 015 name users "i:<id>", and before migration 007
 * a user known by email alone "e:<email>" with no id; the id is the same in each.
 */
export function withStoredKeys<Operation extends ProfileOperation>(
  operation: Operation,
  keyOf: ProfileKeyOf,
): Operation {
  const id = operation.id ?? profileIdOf(operation);
  const keyed = { ...operation, key: keyOf(operation.projectId, id), id };
  return operation.op === "reidentify" ? { ...keyed, newKey: keyOf(operation.projectId, operation.newId) } : keyed;
}
