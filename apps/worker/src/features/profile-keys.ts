import { profileKeySecrets, type Sql } from "@cm/db";
import { profileKeysWith, type ProfileKeyOf } from "@cm/domain";

/** The stored profile keys of the users of some projects (libs/domain storedProfileKey). */
export type ProfileKeys = (projectIds: Iterable<number>) => Promise<ProfileKeyOf>;

/** Each project's secret is read once: it never changes (migration 015). */
export function cachedProfileKeys(sql: Sql): ProfileKeys {
  const secrets = new Map<number, Buffer>();
  return async (projectIds) => {
    const missing = [...new Set(projectIds)].filter((id) => !secrets.has(id));
    if (missing.length > 0) for (const [id, secret] of await profileKeySecrets(sql, missing)) secrets.set(id, secret);
    return profileKeysWith(secrets);
  };
}

/**
 * A job's items as the workers store them, each keyed by `keyed`; an item of a project that no
 * longer exists has no key and is refused.
 */
export async function keyedForStorage<Item extends { projectId: number }>(
  profileKeys: ProfileKeys,
  items: readonly Item[],
  keyed: (item: Item, keyOf: ProfileKeyOf) => Item,
): Promise<{ keyed: Item[]; refused: { item: Item; error: unknown }[] }> {
  const keyOf = await profileKeys(items.map((item) => item.projectId));
  const result: { keyed: Item[]; refused: { item: Item; error: unknown }[] } = { keyed: [], refused: [] };
  for (const item of items) {
    try {
      result.keyed.push(keyed(item, keyOf));
    } catch (error) {
      result.refused.push({ item, error });
    }
  }
  return result;
}
