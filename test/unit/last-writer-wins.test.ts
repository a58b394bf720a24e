import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  emptyState,
  erasureState,
  isNewer,
  mergeStates,
  stamp,
  stampBounds,
  stateFromOperation,
  tieBreaker,
  visibleProfile,
  type IdentifyEvent,
  type ProfileState,
} from "@cm/domain";

const base = { projectId: 1, key: "i:u", id: "u" };
const at = (t: number, fields: Partial<IdentifyEvent> = {}): IdentifyEvent => ({
  ...base,
  t,
  updateOnly: false,
  ...fields,
});
const merged = (...events: IdentifyEvent[]): ProfileState => events.map(stateFromOperation).reduce(mergeStates);

/** Identifies of one user stamped 1 to `maxT`, with a few values each, so that ties are common. */
const identifyEvents = (maxT: number) =>
  fc
    .record({
      t: fc.integer({ min: 1, max: maxT }),
      updateOnly: fc.boolean(),
      email: fc.option(fc.constantFrom("a@x.co", "b@x.co"), { nil: undefined }),
      phoneNumber: fc.option(fc.constantFrom("+100", "+200"), { nil: undefined }),
      data: fc.dictionary(fc.constantFrom("k1", "k2", "k3"), fc.constantFrom(null, 1, "v")),
    })
    .map(({ t, updateOnly, email, phoneNumber, data }) =>
      at(t, { updateOnly, data, ...(email ? { email } : {}), ...(phoneNumber ? { phoneNumber } : {}) }),
    );

describe("last-writer-wins per field", () => {
  it("keeps the newer value of each field, and lets an older update set fields no newer one touched", () => {
    const state = merged(
      at(2, { email: "new@x.co", data: { plan: "pro" } }),
      at(1, { email: "old@x.co", phoneNumber: "+100", data: { plan: "free", city: "Oslo" } }),
      at(3, { phoneNumber: "+200" }),
    );
    expect(visibleProfile(state)).toMatchObject({
      email: "new@x.co",
      phoneNumber: "+200",
      data: { plan: "pro", city: "Oslo" },
    });
  });

  it("clears a data key set to null, and an older value does not bring it back", () => {
    const state = merged(
      at(1, { data: { plan: "pro" } }),
      at(3, { data: { plan: null } }),
      at(2, { data: { plan: "team" } }),
    );
    expect(visibleProfile(state)?.data).toEqual({});
  });

  it("breaks ties of different values written at the same time the same way whatever the order", () => {
    const a = at(5, { email: "a@x.co" });
    const b = at(5, { email: "b@x.co" });
    expect(visibleProfile(merged(a, b))).toEqual(visibleProfile(merged(b, a)));
  });

  it("keys channels by type and address", () => {
    const state = merged(
      at(1, { channels: [{ type: "push", address: "t1", platform: "ios" }] }),
      at(2, {
        channels: [
          { type: "push", address: "t1", platform: "android" },
          { type: "sms", address: "+100", platform: null },
        ],
      }),
    );
    expect(visibleProfile(state)?.channels).toEqual([
      { type: "push", address: "t1", platform: "android" },
      { type: "sms", address: "+100", platform: null },
    ]);
  });

  it("applies update_only updates only from the time the profile exists", () => {
    expect(visibleProfile(merged(at(5, { updateOnly: true, data: { a: 1 } })))).toBeNull();
    const state = merged(
      at(3, { updateOnly: true, data: { early: 1 } }),
      at(4, { data: { b: 2 } }),
      at(5, { updateOnly: true, data: { late: 3 } }),
    );
    expect(visibleProfile(state)?.data).toEqual({ b: 2, late: 3 });
  });

  it("is commutative, associative and idempotent", () => {
    const event = identifyEvents(4);
    fc.assert(
      fc.property(event, event, event, (x, y, z) => {
        const [a, b, c] = [x, y, z].map(stateFromOperation) as [ProfileState, ProfileState, ProfileState];
        expect(mergeStates(a, b)).toEqual(mergeStates(b, a));
        expect(mergeStates(mergeStates(a, b), c)).toEqual(mergeStates(a, mergeStates(b, c)));
        expect(mergeStates(a, a)).toEqual(a);
      }),
    );
  });
});

describe("stamps", () => {
  it("carry a tie-breaker only for values that are not their own, and break ties the same either way", () => {
    for (const plain of [null, true, 0, -7, 2 ** 53 - 1, "", "pro", "ann@example.com", "x".repeat(62)]) {
      expect(stamp(1, plain)).toEqual({ t: 1, v: plain });
    }
    for (const other of [1.5, 2 ** 53, 'a"b', "a\\b", "tab\t", "Zürich", "x".repeat(63), { a: 1 }, [1]]) {
      expect(stamp(1, other)).toEqual({ t: 1, h: tieBreaker(other), v: other });
    }
    const tied = ["pro", "Zürich", 'a"b', 7, true, null].map((v) => stamp(1, v));
    for (const a of tied) {
      for (const b of tied) expect(isNewer(a, b)).toBe(tieBreaker(a.v) > tieBreaker(b.v));
    }
    expect(isNewer(stamp(2, "a"), stamp(1, "b"))).toBe(true);
  });
});

describe("stamp bounds", () => {
  it("span every stamp of a state, erasure and creation included, and are null without one", () => {
    expect(stampBounds(emptyState())).toBeNull();
    expect(stampBounds(at(5, { updateOnly: true }))).toBeNull();
    const state = mergeStates(
      mergeStates(stateFromOperation(at(7, { data: { a: 1 } })), stateFromOperation(at(9, { email: "a@x.co" }))),
      erasureState(3),
    );
    expect(stampBounds(state)).toEqual({ oldest: 3, newest: 9 });
    expect(stampBounds(erasureState(4))).toEqual({ oldest: 4, newest: 4 });
  });

  it("make a write whose every stamp is newer than the row's, and that erases nothing, the write laid over the row", () => {
    const event = identifyEvents(6).map(stateFromOperation);
    const row = fc.tuple(fc.array(event, { minLength: 1, maxLength: 3 }), fc.option(fc.integer({ min: 1, max: 6 })));
    fc.assert(
      fc.property(row, fc.array(event, { minLength: 1, maxLength: 3 }), ([parts, erasedAt], writeParts) => {
        const stored = [...parts, ...(erasedAt === null ? [] : [erasureState(erasedAt)])].reduce(mergeStates);
        const write = writeParts.reduce(mergeStates);
        const [rowBounds, writeBounds] = [stampBounds(stored), stampBounds(write)];
        fc.pre(rowBounds !== null && writeBounds !== null && writeBounds.oldest > rowBounds.newest);
        const merged = mergeStates(stored, write);
        expect(merged.data).toEqual({ ...stored.data, ...write.data });
        expect(merged.email).toEqual(write.email ?? stored.email);
      }),
    );
  });
});
