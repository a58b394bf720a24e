import { describe, expect, it } from "vitest";
import { profileWriteChanges, type ProfileImage } from "@cm/domain";

// The feed's changes worked out from a profile's row before and after a write, as the capture
// stores them (migration 025). test/db/change-feed.test.ts reads the same through the capture.

const image = (values: Partial<ProfileImage>): ProfileImage => ({
  external_id: "ada",
  created_t: 100,
  last_created_t: 100,
  deleted_t: null,
  email: null,
  phone_number: null,
  unsubscribed: null,
  data: {},
  channels: {},
  tags: {},
  topic_choices: {},
  topic_defaults: {},
  ...values,
});

const typesOf = (before: ProfileImage | null, after: ProfileImage) =>
  profileWriteChanges(before, after).map(({ type }) => type);

describe("profileWriteChanges", () => {
  it("makes a new profile's creation, then its tags, subscription and topic choices, in that order", () => {
    const after = image({
      email: { t: 100, v: "ada@example.com" },
      data: { plan: { t: 100, v: "free" }, early: { t: 50, v: "stamped before the profile was created" } },
      tags: { vip: { t: 100, v: true } },
      unsubscribed: { t: 100, v: true },
      topic_choices: { "7": { t: 100, v: "unsubscribed" } },
    });
    expect(profileWriteChanges(null, after)).toEqual([
      { type: "profile.created", userId: "ada", change: { data: { plan: "free" }, email: "ada@example.com" } },
      { type: "tags.changed", userId: "ada", change: { added: ["vip"], removed: [] } },
      { type: "unsubscribed", userId: "ada", change: {} },
      {
        type: "topic.choice_changed",
        userId: "ada",
        change: { topic_id: 7, status: "unsubscribed", source: "explicit" },
      },
    ]);
  });

  it("makes a changed profile's change of the values seen that changed, a cleared one as null", () => {
    const before = image({ data: { plan: { t: 100, v: "free" }, seats: { t: 100, v: 3 }, lang: { t: 100, v: "en" } } });
    const after = image({
      data: { plan: { t: 200, v: "team" }, seats: { t: 200, v: null }, lang: { t: 100, v: "en" }, never: { t: 200 } },
    });
    expect(profileWriteChanges(before, after)).toEqual([
      { type: "profile.changed", userId: "ada", change: { data: { plan: "team", seats: null } } },
    ]);
  });

  it("makes no change of values written again, nor of a tag removed that was not on", () => {
    const before = image({ email: { t: 100, v: "ada@example.com" }, tags: { vip: { t: 100, v: true } } });
    expect(profileWriteChanges(before, image({ ...before }))).toEqual([]);
    const tagged = image({ ...before, tags: { vip: { t: 100, v: true }, gone: { t: 200, v: false } } });
    expect(profileWriteChanges(before, tagged)).toEqual([]);
    const untagged = image({ ...before, tags: { vip: { t: 200, v: false } } });
    expect(profileWriteChanges(before, untagged)).toEqual([
      { type: "tags.changed", userId: "ada", change: { added: [], removed: ["vip"] } },
    ]);
  });

  it("makes a resubscribe of an unsubscribe cleared, and nothing of one never seen", () => {
    const unsubscribed = image({ unsubscribed: { t: 100, v: true } });
    expect(typesOf(unsubscribed, image({ unsubscribed: { t: 200, v: false } }))).toEqual(["resubscribed"]);
    expect(typesOf(image({}), image({ unsubscribed: { t: 200, v: false } }))).toEqual([]);
    expect(typesOf(image({}), image({ unsubscribed: { t: 50, v: true } }))).toEqual([]);
  });

  it("makes an erasure's change with the id before it, and nothing seen of the row before", () => {
    const erased = image({ external_id: "ada", deleted_t: 300, created_t: 100, last_created_t: null });
    const before = image({ ...erased, deleted_t: null, last_created_t: 100 });
    expect(
      profileWriteChanges(before, image({ external_id: null, deleted_t: 300, created_t: 100, last_created_t: null })),
    ).toEqual([{ type: "user.erased", userId: "ada", change: {} }]);
    // Identified again in the same write: a new profile, from its creation after the erasure.
    const again = image({
      deleted_t: 300,
      created_t: 400,
      last_created_t: 400,
      email: { t: 400, v: "new@example.com" },
    });
    expect(profileWriteChanges(before, again)).toEqual([
      { type: "user.erased", userId: "ada", change: {} },
      { type: "profile.created", userId: "ada", change: { email: "new@example.com" } },
    ]);
  });

  it("makes a default a topic's fan-out gives a change where no choice of the profile is seen", () => {
    const before = image({ topic_choices: { "8": { t: 100, v: "subscribed" } } });
    const after = image({ ...before, topic_defaults: { "7": "unsubscribed", "8": "unsubscribed" } });
    expect(profileWriteChanges(before, after)).toEqual([
      {
        type: "topic.choice_changed",
        userId: "ada",
        change: { topic_id: 7, status: "unsubscribed", source: "default" },
      },
    ]);
    // A new profile's defaults are not its changes: its explicit choice is.
    expect(profileWriteChanges(null, after).map(({ change }) => change.source)).toEqual([undefined, "explicit"]);
  });

  it("makes nothing of a row that is no profile", () => {
    expect(
      profileWriteChanges(null, image({ created_t: null, last_created_t: null, email: { t: 1, v: "x" } })),
    ).toEqual([]);
  });

  it("keeps a map key named like a member of Object.prototype as a key", () => {
    const before = image({ data: JSON.parse('{"constructor": {"t": 100, "v": 1}}') as ProfileImage["data"] });
    const after = image({ data: JSON.parse('{"constructor": {"t": 200, "v": 2}}') as ProfileImage["data"] });
    expect(JSON.stringify(profileWriteChanges(before, after)[0]?.change)).toBe('{"data":{"constructor":2}}');
  });
});
