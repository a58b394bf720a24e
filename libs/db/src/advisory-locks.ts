import type postgres from "postgres";

// Advisory lock ids are one number space shared by everything that uses the database, so every
// id this service takes is named here, where a clash would show.

/** Serialises migrators: the Kubernetes Job, gateway pods and a launcher may all migrate at once. */
export const MIGRATION_LOCK = 4_200_001;
/** Concurrent `ctl demo` runs (a launcher, an operator) must create one demo project between them. */
export const DEMO_PROJECT_LOCK = 4_200_002;

/**
 * Serialises a project's deletes and reidentifies (taken with the project's id as the second
 * key of Postgres' two-key locks, a space apart from the one-key locks above, by
 * recordLinkOperations, inside libs/db/functions/record_link_operations.sql): each reads the links
 * and erasures the other writes, so that an erasure reaches every id linked before it,
 * whichever of the two is applied first.
 */
export const PROFILE_LINKS_LOCK = 4_200_003;

/**
 * A project's event writes (shared) against the erasure of its events (exclusive), two-key like
 * PROFILE_LINKS_LOCK: an erasure waits for the event writes in flight, and a write after it
 * sees the erased rows' stamps, so that no event acknowledged before a delete outlives it.
 */
export const PROJECT_EVENTS_LOCK = 4_200_004;
/** Concurrent makers of event partitions (every worker at start, the maintenance job). */
export const EVENT_PARTITIONS_LOCK = 4_200_005;
/**
 * On Citus, one reader at a time moves the change feed's epoch on and closes epochs (taken with
 * pg_try_advisory_xact_lock inside libs/db/functions/change_feed.sql change_feed_closed; a reader
 * that cannot take it reads what is closed already).
 */
export const CHANGE_EPOCHS_LOCK = 4_200_006;

export type AdvisoryLock = typeof MIGRATION_LOCK | typeof DEMO_PROJECT_LOCK | typeof EVENT_PARTITIONS_LOCK;

/** Waits for the lock and holds it until the transaction ends. */
export async function takeAdvisoryLock(tx: postgres.TransactionSql, lock: AdvisoryLock): Promise<void> {
  await tx`SELECT pg_advisory_xact_lock(${lock})`;
}
