import {
  batchItems,
  completedJobSummary,
  EVENTS_V1,
  EVENTS_V2,
  EVENTS_WRITE_VERSION,
  eventsJobData,
  operationsOf,
  PROFILE_OPERATIONS_V1,
  PROFILE_OPERATIONS_V2,
  PROFILE_OPERATIONS_WRITE_VERSION,
  profileOperationsJobData,
  withBatchItems,
} from "@cm/queue";
import { describe, expect, it } from "vitest";
import { profileOperations } from "../support/profile-operations";

// The batch jobs' payloads on the wire (libs/queue/src/payloads.ts): version 1, which this
// release writes and the previous one reads, and version 2, which this release reads and the
// next one writes (docs/code.md, "A job through the workers").

const p = profileOperations(7);
const operations = [p.identify("a", 1, { data: { plan: "pro" } }), p.reidentify("a", "b", 2), p.delete("c", 3)];
const trackedEvent = {
  projectId: 7,
  key: "i:a",
  userId: "a",
  eventId: "e-1",
  name: "Signed up",
  data: null,
  t: 1,
  receivedAt: 1,
};

describe("profile operations jobs", () => {
  it("are written in version 1 by this release: the operations in `events`, as the gateway made them", () => {
    expect(PROFILE_OPERATIONS_WRITE_VERSION).toBe(1);
    expect(profileOperationsJobData(operations)).toEqual({
      ...PROFILE_OPERATIONS_V1,
      events: operations,
      acceptedAt: expect.any(Number),
    });
  });

  it("hold in version 2 the operations in `operations`, named by their ids alone", () => {
    expect(profileOperationsJobData(operations, 2)).toEqual({
      ...PROFILE_OPERATIONS_V2,
      operations: [
        { projectId: 7, id: "a", t: 1, updateOnly: false, data: { plan: "pro" } },
        { op: "reidentify", projectId: 7, id: "a", t: 2, newId: "b" },
        { op: "delete", projectId: 7, id: "c", t: 3 },
      ],
      acceptedAt: expect.any(Number),
    });
  });

  it("are read in either version, and unmarked, as queued before kinds existed", () => {
    const [v1, v2] = [profileOperationsJobData(operations, 1), profileOperationsJobData(operations, 2)];
    expect(operationsOf(v1)).toEqual(operations);
    expect(operationsOf(v2).map((operation) => operation.id)).toEqual(["a", "a", "c"]);
    expect(operationsOf({ events: operations })).toEqual(operations);
    expect(batchItems(v2)).toEqual(operationsOf(v2));
    expect(withBatchItems(v2, [])).toEqual({ ...v2, operations: [] });
    expect(withBatchItems(v1, [])).toEqual({ ...v1, events: [] });
  });

  it("keep, once completed, how many items they held and of which projects, in the field of their version", () => {
    const summary = completedJobSummary(profileOperationsJobData(operations, 2));
    expect(summary).toMatchObject({ ...PROFILE_OPERATIONS_V2, operations: [], completed: { items: 3, projects: [7] } });
    expect(summary).not.toHaveProperty("events");
  });
});

describe("events jobs", () => {
  it("are written in version 1 by this release, each event with the key the gateway gave it", () => {
    expect(EVENTS_WRITE_VERSION).toBe(1);
    expect(eventsJobData([trackedEvent])).toEqual({
      ...EVENTS_V1,
      events: [trackedEvent],
      acceptedAt: expect.any(Number),
    });
  });

  it("hold in version 2 each event named by its userId alone", () => {
    const { key: _, ...unkeyed } = trackedEvent;
    expect(eventsJobData([trackedEvent], 2)).toEqual({
      ...EVENTS_V2,
      events: [unkeyed],
      acceptedAt: expect.any(Number),
    });
  });
});

describe("jobs of other kinds", () => {
  it("hold no batch items (a worker keeps them whole once completed)", () => {
    expect(batchItems({ kind: "topic-fanout", v: 1, topicId: 1, generation: 1 })).toBeUndefined();
  });
});
