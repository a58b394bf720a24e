import { isRefusedInput, profileKeySecrets, type Sql } from "@cm/db";
import { MAX_JSON_DEPTH, nestedDeeperThan, profileKeysWith, RefusedInput, type ProfileKeyOf } from "@cm/domain";

/** The stored profile keys of the users of some projects (libs/domain storedProfileKey). */
export type ProfileKeys = (projectIds: Iterable<number>) => Promise<ProfileKeyOf>;

/** Keys kept per worker: a user's events and updates come in runs, and a key costs an HMAC (2.5 µs). */
const KEYS_KEPT = 100_000;

/** Each project's secret is read once: it never changes (migration 015); so are the latest keys. */
export function cachedProfileKeys(sql: Sql): ProfileKeys {
  const secrets = new Map<number, Buffer>();
  const keyed = profileKeysWith(secrets);
  const keys = new Map<string, string>();
  const keyOf: ProfileKeyOf = (projectId, id) => {
    const user = `${projectId}\u0000${id}`;
    let key = keys.get(user);
    if (key === undefined) {
      key = keyed(projectId, id);
      if (keys.size >= KEYS_KEPT) keys.clear();
      keys.set(user, key);
    }
    return key;
  };
  return async (projectIds) => {
    const missing = [...new Set(projectIds)].filter((id) => !secrets.has(id));
    if (missing.length > 0) for (const [id, secret] of await profileKeySecrets(sql, missing)) secrets.set(id, secret);
    return keyOf;
  };
}

/** Deeper than any gateway queues: its bodies nest MAX_JSON_DEPTH levels at most, in an item of a few. */
const MAX_QUEUED_DEPTH = MAX_JSON_DEPTH + 8;

/**
 * A job's items as the workers store them, each keyed by `keyed`. An item nested deeper than any
 * gateway queues, or of a project that no longer exists, is refused (libs/domain RefusedInput);
 * any other error is thrown, for the job to be retried.
 */
export async function keyedForStorage<Item extends { projectId: number }, Keyed>(
  profileKeys: ProfileKeys,
  items: readonly Item[],
  keyed: (item: Item, keyOf: ProfileKeyOf) => Keyed,
): Promise<{ keyed: Keyed[]; refused: { item: Item; error: unknown }[] }> {
  const keyOf = await profileKeys(items.map((item) => item.projectId));
  const result: { keyed: Keyed[]; refused: { item: Item; error: unknown }[] } = { keyed: [], refused: [] };
  for (const item of items) {
    try {
      if (nestedDeeperThan(item, MAX_QUEUED_DEPTH)) {
        throw new RefusedInput(`objects and arrays nest deeper than ${MAX_QUEUED_DEPTH} levels`);
      }
      result.keyed.push(keyed(item, keyOf));
    } catch (error) {
      if (!isRefusedInput(error)) throw error;
      result.refused.push({ item, error });
    }
  }
  return result;
}
