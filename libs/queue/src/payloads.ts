import type { ProfileOperation, TrackedEvent, UnkeyedEvent, UnkeyedProfileOperation } from "@cm/domain";

/**
 * Every batch job names its kind and the version of its payload, so that a worker meeting a
 * kind or version it does not know (a newer gateway's, during a rolling update) leaves the job
 * for a worker that does, instead of misreading it or dead-lettering it. A new version is rolled
 * out over two releases: the workers of the first read it, the gateways of the second write it
 * (docs/code.md, "A job through the workers").
 */
export interface KindVersion {
  kind: string;
  v: number;
}

/**
 * Profile operations, in the queue and job named "identify" (names on the wire). Version 1
 * holds them in `events`, since jobs held only identifies, each naming its profile by `key` (and
 * a reidentify its new one by `newKey`) as well as by its ids; jobs queued by gateways before
 * kinds existed carry no kind or version and read as version 1.
 */
export const PROFILE_OPERATIONS_V1 = { kind: "profile-operations", v: 1 } as const;
/** Version 2 holds them in `operations`, each named by its ids alone (UnkeyedProfileOperation). */
export const PROFILE_OPERATIONS_V2 = { kind: "profile-operations", v: 2 } as const;
/** The versions this release's workers read. */
export const PROFILE_OPERATIONS_READ: readonly KindVersion[] = [PROFILE_OPERATIONS_V1, PROFILE_OPERATIONS_V2];
/**
 * The version this release's gateways (and ctl) write: 1, because the previous release's workers
 * read version 1 only and leave a version 2 job alone until a worker of this release takes it.
 * The next release, whose previous release is this one, writes 2 (test/compat/adjacent-releases
 * fails while the previous release's workers do not read it).
 */
export const PROFILE_OPERATIONS_WRITE_VERSION: 1 | 2 = 1;

/**
 * Tracked events (docs/events.md), in `events`. Version 1 names each event's profile by `key`
 * as well as by `userId`.
 */
export const EVENTS_V1 = { kind: "events", v: 1 } as const;
/** Version 2 names it by `userId` alone (UnkeyedEvent). */
export const EVENTS_V2 = { kind: "events", v: 2 } as const;
/** The versions this release's workers read. */
export const EVENTS_READ: readonly KindVersion[] = [EVENTS_V1, EVENTS_V2];
/** The version this release's gateways (and ctl) write, as PROFILE_OPERATIONS_WRITE_VERSION: the next release writes 2. */
export const EVENTS_WRITE_VERSION: 1 | 2 = 1;

/** What every gateway micro-batch's job holds besides its items (the items it accepted within a few milliseconds). */
interface BatchJobHeader<Kind extends KindVersion> {
  kind: Kind["kind"];
  v: Kind["v"];
  /** When the gateway stored the job (ms since the epoch), for the end-to-end lag metric. */
  acceptedAt?: number;
}

export type ProfileOperationsJobData =
  | (Partial<BatchJobHeader<typeof PROFILE_OPERATIONS_V1>> & { events: ProfileOperation[] })
  | (BatchJobHeader<typeof PROFILE_OPERATIONS_V2> & { operations: UnkeyedProfileOperation[] });

export type EventsJobData =
  | (BatchJobHeader<typeof EVENTS_V1> & { events: TrackedEvent[] })
  | (BatchJobHeader<typeof EVENTS_V2> & { events: UnkeyedEvent[] });

export type BatchJobData = ProfileOperationsJobData | EventsJobData;

/** What a batch job of `Data` holds: profile operations or events, keyed or not as its version says. */
export type BatchItem<Data extends BatchJobData> = Data extends EventsJobData ? UnkeyedEvent : UnkeyedProfileOperation;

/** The job of a profile operations micro-batch, in payload version `v`. */
export function profileOperationsJobData(
  operations: ProfileOperation[],
  v: 1 | 2 = PROFILE_OPERATIONS_WRITE_VERSION,
): ProfileOperationsJobData {
  const acceptedAt = Date.now();
  return v === 1
    ? { ...PROFILE_OPERATIONS_V1, events: operations, acceptedAt }
    : { ...PROFILE_OPERATIONS_V2, operations: operations.map(unkeyedOperation), acceptedAt };
}

/** The job of an events micro-batch, in payload version `v`. */
export function eventsJobData(events: TrackedEvent[], v: 1 | 2 = EVENTS_WRITE_VERSION): EventsJobData {
  const acceptedAt = Date.now();
  return v === 1
    ? { ...EVENTS_V1, events, acceptedAt }
    : { ...EVENTS_V2, events: events.map(({ key: _, ...event }) => event), acceptedAt };
}

/** Workers key an operation by its ids themselves (withStoredKeys): version 2 leaves the keys out. */
function unkeyedOperation(operation: ProfileOperation): UnkeyedProfileOperation {
  if (operation.op === "reidentify") {
    const { key: _, newKey: __, ...unkeyed } = operation;
    return unkeyed;
  }
  const { key: _, ...unkeyed } = operation;
  return unkeyed;
}

/** A profile operations job's operations, of either version. */
export function operationsOf(data: ProfileOperationsJobData): UnkeyedProfileOperation[] {
  return "operations" in data ? data.operations : data.events;
}

/** A job's items, in the field its kind and version keep them in; undefined for a job that is no micro-batch. */
export function batchItems(data: object): unknown[] | undefined {
  const items = "operations" in data ? data.operations : "events" in data ? data.events : undefined;
  return Array.isArray(items) ? items : undefined;
}

/** The job with `items` in place of its own, in the field its kind and version keep them in. */
export function withBatchItems<Data extends object>(data: Data, items: unknown[]): Data {
  return "operations" in data ? { ...data, operations: items } : { ...data, events: items };
}
