import { RefusedInput } from "../kernel/problems";

/**
 * What a profile row's maps may hold at most (docs/profiles.md, "Limits"), in bytes as Postgres
 * stores each (jsonb before compression: about its compact JSON text, plus some 40 bytes a key for
 * its stamp). A row of the change feed holds a profile row before and after a write, so these bound
 * what one change of the feed, and so one page of it, holds. Migration 029 holds the same numbers,
 * as the domains the workers' upsert casts to.
 */
export const PROFILE_MAP_BYTES = { data: 1_048_576, tags: 262_144, channels: 262_144 } as const;

export type BoundedProfileMap = keyof typeof PROFILE_MAP_BYTES;

/**
 * A write that would take a profile's map past PROFILE_MAP_BYTES: refused input, so the operation
 * that makes it is dead-lettered on its own, never tried again, and the others of its job applied.
 */
export class ProfileTooLarge extends RefusedInput {
  override name = "ProfileTooLarge";

  constructor(readonly map: BoundedProfileMap) {
    super(
      `the profile's ${map} would hold more than ${PROFILE_MAP_BYTES[map] / 1024} KiB as stored ` +
        `(${PROFILE_MAP_BYTES[map]} bytes, docs/profiles.md "Limits"): the operation is not applied`,
    );
  }
}
