import { profileKeySecrets, type Sql } from "@cm/db";
import {
  profileKeysWith,
  type DeleteOperation,
  type EditOperation,
  type IdentifyEvent,
  type ReidentifyOperation,
  type SubscriptionOperation,
  type TagsOperation,
} from "@cm/domain";
import { NotFound, readProfile } from "@cm/app";

/** The stored key of a user of a project (libs/domain storedProfileKey). */
export async function storedKeyOf(sql: Sql, projectId: number, id: string): Promise<string> {
  return profileKeysWith(await profileKeySecrets(sql, [projectId]))(projectId, id);
}

/** The operations of Vero's users API for one project, as the gateway queues them. */
export function profileOperations(projectId: number) {
  const on = (id: string, t: number) => ({ projectId, key: `i:${id}`, id, t });
  return {
    identify: (id: string, t: number, fields: Partial<IdentifyEvent> = {}): IdentifyEvent => ({
      ...on(id, t),
      updateOnly: false,
      ...fields,
    }),
    edit: (id: string, t: number, changes: EditOperation["changes"]): EditOperation => ({
      op: "edit",
      ...on(id, t),
      changes,
    }),
    tags: (id: string, t: number, add: string[], remove: string[] = []): TagsOperation => ({
      op: "tags",
      ...on(id, t),
      add,
      remove,
    }),
    subscription: (id: string, t: number, unsubscribed: boolean): SubscriptionOperation => ({
      op: "subscription",
      ...on(id, t),
      unsubscribed,
    }),
    delete: (id: string, t: number): DeleteOperation => ({ op: "delete", ...on(id, t) }),
    reidentify: (id: string, newId: string, t: number): ReidentifyOperation => ({
      op: "reidentify",
      ...on(id, t),
      newId,
      newKey: `i:${newId}`,
    }),
  };
}

/** GET /api/v2/users/:id's answer, or null for its 404. */
export async function readProfileOrNull(sql: Sql, projectId: number, id: string) {
  const keyOf = profileKeysWith(await profileKeySecrets(sql, [projectId]));
  return readProfile({ sql }, projectId, id, keyOf).catch((error: unknown) => {
    if (error instanceof NotFound) return null;
    throw error;
  });
}
