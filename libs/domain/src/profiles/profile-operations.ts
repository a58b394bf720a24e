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
export type StateOperation = IdentifyEvent | EditOperation | TagsOperation | SubscriptionOperation;

/** The operations that link or erase profile rows (recorded first, for the state writes to follow). */
export type LinkOperation = DeleteOperation | ReidentifyOperation;

/**
 * Which of the two each kind of operation is. Every kind must be named here, so that an operation
 * added to the union does not compile until it is placed; a kind not named here is one a newer
 * release queued, which this worker leaves alone (isKnownOperation).
 */
const OPERATION_CLASS = {
  identify: "state",
  edit: "state",
  tags: "state",
  subscription: "state",
  delete: "link",
  reidentify: "link",
} as const satisfies Record<ProfileOperationKind, "state" | "link">;

/** Whether this release knows the operation's kind (queued data is read without validation). */
export function isKnownOperation(operation: { op?: unknown }): boolean {
  return (
    operation.op === undefined || (typeof operation.op === "string" && Object.hasOwn(OPERATION_CLASS, operation.op))
  );
}

export function isStateOperation(operation: ProfileOperation): operation is StateOperation {
  return OPERATION_CLASS[operationKind(operation)] === "state";
}

export function isLinkOperation(operation: ProfileOperation): operation is LinkOperation {
  return OPERATION_CLASS[operationKind(operation)] === "link";
}
