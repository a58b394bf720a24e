import type { IdentifyEvent } from "./identify";
import type { Json } from "../kernel/json";

// The operations of Vero's users API, as the gateway queues them for the workers (in the same
// micro-batches and jobs as identifies). `key` names the profile the request named (as
// IdentifyEvent's does), `id` is that user's id (or email, which is the id of a user known by
// email alone), `t` stamps it.

interface OperationOf<Op extends string> {
  op: Op;
  projectId: number;
  key: string;
  id: string;
  t: number;
}

/** PUT /users/edit: sets data keys, or clears them with null; never creates a profile. */
export interface EditOperation extends OperationOf<"edit"> {
  changes: Record<string, Json>;
}

/** PUT /users/tags/edit: each tag added or removed at `t`. */
export interface TagsOperation extends OperationOf<"tags"> {
  add: string[];
  remove: string[];
}

/** POST /users/unsubscribe (true) and /users/resubscribe (false): the global opt-out. */
export interface SubscriptionOperation extends OperationOf<"subscription"> {
  unsubscribed: boolean;
}

/** POST /users/delete: erasure of the profile `key` is known by at `t`. */
export type DeleteOperation = OperationOf<"delete">;

/** PUT /users/reidentify: from `t` on, `key` is known by `newKey`. */
export interface ReidentifyOperation extends OperationOf<"reidentify"> {
  newId: string;
  newKey: string;
}

/** Identifies carry no `op`: jobs queued before the other operations existed hold only them. */
export type ProfileOperation =
  IdentifyEvent | EditOperation | TagsOperation | SubscriptionOperation | DeleteOperation | ReidentifyOperation;

export type ProfileOperationKind = "identify" | Exclude<ProfileOperation["op"], undefined>;

export function operationKind(operation: ProfileOperation): ProfileOperationKind {
  return operation.op ?? "identify";
}

/** The operations that change one profile row by merging a state into it. */
export type StateOperation = Exclude<ProfileOperation, DeleteOperation | ReidentifyOperation>;

export function isStateOperation(operation: ProfileOperation): operation is StateOperation {
  return operation.op !== "delete" && operation.op !== "reidentify";
}
