import type { ProfileOperation, TrackedEvent } from "@cm/domain";

/**
 * Every batch job names its kind and the version of its payload, so that a worker meeting a
 * kind or version it does not know (a newer gateway's, during a rolling update) leaves the job
 * for a worker that does, instead of misreading it or dead-lettering it.
 */
export const PROFILE_OPERATIONS_KIND = { kind: "profile-operations", v: 1 } as const;
export const EVENTS_KIND = { kind: "events", v: 1 } as const;

/** One gateway micro-batch: the items it accepted within a few milliseconds. */
interface BatchJobData<Kind extends { kind: string; v: number }, Item> {
  kind: Kind["kind"];
  v: Kind["v"];
  events: Item[];
  /** When the gateway stored the job (ms since the epoch), for the end-to-end lag metric. */
  acceptedAt?: number;
}

/**
 * Identifies and the other profile operations, in the queue and job named "identify" (names on
 * the wire, read by the previous release too). Their list is named `events` since jobs held
 * only identifies, and jobs queued by gateways before kinds existed carry none: both read as
 * version 1 of this kind.
 */
export type ProfileOperationsJobData = Omit<
  BatchJobData<typeof PROFILE_OPERATIONS_KIND, ProfileOperation>,
  "kind" | "v"
> &
  Partial<Pick<BatchJobData<typeof PROFILE_OPERATIONS_KIND, ProfileOperation>, "kind" | "v">>;

/** Tracked events (docs/events.md). */
export type EventsJobData = BatchJobData<typeof EVENTS_KIND, TrackedEvent>;
