import type { tags } from "typia";
import { profileKeyForId, userIdOf, userIdText, type UserEmail, type UserId } from "./identify";
import type { Json } from "../kernel/json";
import type {
  DeleteOperation,
  EditOperation,
  ReidentifyOperation,
  SubscriptionOperation,
  TagsOperation,
} from "./profile-operations";
import { InvalidInput } from "../kernel/problems";

// The bodies of Vero's other users-API operations (docs/profiles.md "Requests"), and their
// conversion to the operations the gateway queues. Like identify's body: unknown top-level
// fields are ignored and a null top-level field is a field not given.

/** The user a request names: by `id`, or by `email` for a user known by email alone. */
export interface UserRefBody {
  id?: UserId | null;
  email?: UserEmail | null;
}

/** PUT /users/edit. */
export interface EditUserBody extends UserRefBody {
  /** Data keys to set; a null value clears its key. Free-form, as identify's `data`. */
  changes: Record<string, unknown>;
}

/** Surrounding spaces are dropped, and a tag left empty is no tag (docs/profiles.md). */
export type Tag = string & tags.MaxLength<255>;
export type TagList = Tag[] & tags.MaxItems<100>;

/** PUT /users/tags/edit: at least one tag, in either list. */
export interface EditTagsBody extends UserRefBody {
  add?: TagList | null;
  remove?: TagList | null;
}

/** PUT /users/reidentify: `id` is known as `new_id` from now on. */
export interface ReidentifyBody {
  id: UserId;
  new_id: UserId;
}

/** What every operation carries: the project, the profile it names and its stamp. */
function namedUser(projectId: number, body: UserRefBody, t: number) {
  const id = userIdOf(body);
  return { projectId, key: profileKeyForId(id), id, t };
}

export function toEditOperation(projectId: number, body: EditUserBody, receivedAt: number): EditOperation {
  return { op: "edit", ...namedUser(projectId, body, receivedAt), changes: body.changes as Record<string, Json> };
}

/** Trimmed, without empty or repeated tags. */
function tagSet(list: TagList | null | undefined): string[] {
  return [...new Set((list ?? []).map((tag) => tag.trim()).filter((tag) => tag !== ""))];
}

export function toTagsOperation(projectId: number, body: EditTagsBody, receivedAt: number): TagsOperation {
  const add = tagSet(body.add);
  const remove = tagSet(body.remove);
  if (add.length === 0 && remove.length === 0) {
    throw new InvalidInput([{ path: "add", message: "add or remove must name at least one tag" }]);
  }
  return { op: "tags", ...namedUser(projectId, body, receivedAt), add, remove };
}

/** Unsubscribe (`unsubscribed` true) or resubscribe (false). */
export function toSubscriptionOperation(
  projectId: number,
  body: UserRefBody,
  receivedAt: number,
  unsubscribed: boolean,
): SubscriptionOperation {
  return { op: "subscription", ...namedUser(projectId, body, receivedAt), unsubscribed };
}

export function toDeleteOperation(projectId: number, body: UserRefBody, receivedAt: number): DeleteOperation {
  return { op: "delete", ...namedUser(projectId, body, receivedAt) };
}

/**
 * The reidentify, or null for one onto the same id: nothing to do, and answered 200 all the
 * same (an integration platform's connection check sends exactly that).
 */
export function toReidentifyOperation(
  projectId: number,
  body: ReidentifyBody,
  receivedAt: number,
): ReidentifyOperation | null {
  const id = userIdText(body.id, "id");
  const newId = userIdText(body.new_id, "new_id");
  if (newId === id) return null;
  return {
    op: "reidentify",
    projectId,
    key: profileKeyForId(id),
    id,
    t: receivedAt,
    newId,
    newKey: profileKeyForId(newId),
  };
}
