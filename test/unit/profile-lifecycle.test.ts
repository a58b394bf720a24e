import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  aliasComponents,
  aliasGroup,
  canonicalKey,
  emptyState,
  erasureState,
  linkedState,
  mergeStates,
  stateFromOperation,
  visibleProfile,
  type ProfileState,
  type StateOperation,
} from "@cm/domain";

const base = { projectId: 1, key: "i:u", id: "u" };
const identify = (t: number, fields: object = {}): StateOperation => ({ ...base, t, updateOnly: false, ...fields });
const edit = (t: number, changes: Record<string, string | null>): StateOperation => ({
  ...base,
  op: "edit",
  t,
  changes,
});
const tags = (t: number, add: string[], remove: string[] = []): StateOperation => ({
  ...base,
  op: "tags",
  t,
  add,
  remove,
});
const subscription = (t: number, unsubscribed: boolean): StateOperation => ({
  ...base,
  op: "subscription",
  t,
  unsubscribed,
});
const state = (...parts: (StateOperation | ProfileState)[]): ProfileState =>
  parts.map((p) => ("createdT" in p ? p : stateFromOperation(p))).reduce(mergeStates);

describe("profile lifecycle rules", () => {
  it("edits set and clear data keys stamped like identify's, and never create a profile", () => {
    expect(visibleProfile(state(edit(5, { plan: "pro" })))).toBeNull();
    const profile = visibleProfile(
      state(identify(1, { data: { plan: "free", city: "Oslo" } }), edit(2, { plan: "pro", city: null })),
    );
    expect(profile?.data).toEqual({ plan: "pro" });
  });

  it("keeps tags as a last-writer-wins set, sorted", () => {
    const profile = visibleProfile(
      state(identify(1), tags(2, ["vip", "beta"]), tags(3, [], ["beta"]), tags(1, ["beta", "alpha"])),
    );
    expect(profile?.tags).toEqual(["alpha", "vip"]);
  });

  it("keeps the global opt-out as a stamped flag", () => {
    expect(visibleProfile(state(identify(1)))?.unsubscribed).toBe(false);
    expect(visibleProfile(state(identify(1), subscription(3, true), subscription(2, false)))?.unsubscribed).toBe(true);
    expect(visibleProfile(state(identify(1), subscription(2, true), subscription(3, false)))?.unsubscribed).toBe(false);
  });

  it("erases everything stamped at or before the erasure, for good", () => {
    const erased = state(
      identify(1, { email: "a@x.co", data: { a: 1 } }),
      tags(2, ["vip"]),
      erasureState(3),
      identify(2, { data: { b: 2 } }),
    );
    expect(visibleProfile(erased)).toBeNull();
    expect(erased).toMatchObject({ email: null, data: {}, tags: {}, deletedT: 3, lastCreatedT: null });
  });

  it("starts a new profile with an identify stamped after the erasure", () => {
    const again = state(
      identify(1, { data: { old: 1 } }),
      erasureState(3),
      edit(4, { note: "kept" }),
      identify(5, { data: { new: 1 } }),
    );
    expect(visibleProfile(again)?.data).toEqual({ note: "kept", new: 1 });
  });

  it("merges the rows of a reidentified user field by field", () => {
    const oldRow = state(identify(1, { email: "old@x.co", data: { plan: "free" } }), tags(1, ["a"]));
    const newRow = state(identify(2, { data: { plan: "pro" } }), tags(3, [], ["a"]));
    expect(visibleProfile(oldRow, newRow)).toMatchObject({ email: "old@x.co", data: { plan: "pro" }, tags: [] });
  });

  it("merges any operations and erasures commutatively, associatively and idempotently", () => {
    const t = fc.integer({ min: 1, max: 4 });
    const part = fc.oneof(
      fc
        .record({ t, updateOnly: fc.boolean(), email: fc.constantFrom("a@x.co", "b@x.co") })
        .map(({ t, ...f }) => identify(t, f)),
      fc.record({ t, v: fc.constantFrom("x", null) }).map(({ t, v }) => edit(t, { k: v })),
      fc
        .record({ t, tag: fc.constantFrom("p", "q"), on: fc.boolean() })
        .map(({ t, tag, on }) => (on ? tags(t, [tag]) : tags(t, [], [tag]))),
      fc.record({ t, off: fc.boolean() }).map(({ t, off }) => subscription(t, off)),
      t.map((at) => erasureState(at)),
    );
    const asState = (p: StateOperation | ProfileState) => state(p);
    fc.assert(
      fc.property(part, part, part, (x, y, z) => {
        const [a, b, c] = [x, y, z].map(asState) as [ProfileState, ProfileState, ProfileState];
        expect(mergeStates(a, b)).toEqual(mergeStates(b, a));
        expect(mergeStates(mergeStates(a, b), c)).toEqual(mergeStates(a, mergeStates(b, c)));
        expect(mergeStates(a, a)).toEqual(a);
      }),
    );
  });

  it("reads linked rows as mergeStates of each without its erasure, in one pass", () => {
    const t = fc.integer({ min: 1, max: 4 });
    const row = fc.oneof(
      fc
        .record({ t, updateOnly: fc.boolean(), email: fc.constantFrom("a@x.co", "b@x.co") })
        .map(({ t, ...f }) => state(identify(t, f))),
      fc.record({ t, v: fc.constantFrom("x", null) }).map(({ t, v }) => state(edit(t, { k: v }))),
      fc.record({ t, off: fc.boolean() }).map(({ t, off }) => state(subscription(t, off))),
      fc.record({ t, e: t }).map(({ t, e }) => mergeStates(state(identify(t)), erasureState(e))),
    );
    fc.assert(
      fc.property(fc.array(row, { maxLength: 6 }), (rows) => {
        const byMerge = rows.map((r) => ({ ...r, deletedT: null })).reduce(mergeStates, emptyState());
        expect(linkedState(rows)).toEqual(byMerge);
      }),
    );
  });
});

describe("reidentify aliases", () => {
  it("groups a chain of 5,000 ids whose links come in reverse order", () => {
    const edges = Array.from({ length: 4_999 }, (_, n) => ({ from: `i:${4_998 - n}`, to: `i:${4_999 - n}`, t: n }));
    expect(aliasGroup(edges, "i:0")).toHaveLength(5_000);
    expect(aliasGroup(edges, "i:0", 10)).toEqual(["i:0"]);
    expect(canonicalKey(edges, "i:0")).toBe("i:1");
  });

  it("gives the keys of a page their profiles in one walk: each key's aliasGroup and the links among them", () => {
    const edges = fc.sample(
      fc.array(
        fc.record({
          from: fc.constantFrom("i:a", "i:b", "i:c", "i:d", "i:e"),
          to: fc.constantFrom("i:f", "i:g", "i:h"),
          t: fc.nat(9),
        }),
        {
          maxLength: 6,
        },
      ),
      200,
    );
    const keys = ["i:a", "i:c", "i:f", "i:z"];
    for (const links of edges) {
      const components = aliasComponents(links, keys);
      for (const key of keys) {
        const component = components.get(key);
        expect(component?.keys).toEqual(aliasGroup(links, key));
        expect(component?.edges).toEqual(links.filter((edge) => component?.keys.includes(edge.from)));
        expect(canonicalKey(component?.edges ?? [], key)).toBe(canonicalKey(links, key));
      }
    }
  });

  it("names a profile by the new id of its latest reidentify, and groups every id it had", () => {
    const edges = [
      { from: "i:a", to: "i:b", t: 1 },
      { from: "i:b", to: "i:c", t: 2 },
    ];
    expect(canonicalKey(edges, "i:a")).toBe("i:c");
    expect(aliasGroup(edges, "i:c")).toEqual(["i:a", "i:b", "i:c"]);
    expect(aliasGroup(edges, "i:a", 1)).toEqual(["i:a", "i:b"]);
    expect(canonicalKey([], "i:z")).toBe("i:z");
  });

  it("ends a rename back at the id renamed to last", () => {
    const edges = [
      { from: "i:a", to: "i:b", t: 1 },
      { from: "i:b", to: "i:a", t: 2 },
    ];
    expect(canonicalKey(edges, "i:a")).toBe("i:a");
    expect(canonicalKey(edges, "i:b")).toBe("i:a");
  });

  it("merges a user renamed onto an id that already names a profile", () => {
    const edges = [
      { from: "i:b", to: "i:c", t: 1 },
      { from: "i:a", to: "i:b", t: 2 },
    ];
    expect(canonicalKey(edges, "i:c")).toBe("i:b");
    expect(aliasGroup(edges, "i:a")).toEqual(["i:a", "i:b", "i:c"]);
  });
});
