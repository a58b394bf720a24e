import { describe, expect, it } from "vitest";
import {
  MAX_SPEC_BATCH_MESSAGES,
  namedEventId,
  parseOperation,
  parseSpecMessage,
  problemText,
  specBatchMessages,
  type QueuedOperation,
  type SpecMessageContext,
} from "@cm/domain";

const NOW = Date.parse("2026-06-01T12:00:00.000Z");
const LIVE: SpecMessageContext = {
  projectId: 7,
  receivedAt: NOW,
  source: { kind: "live" },
  dedupWindowMs: 300_000,
  newEventId: () => "00000000-0000-4000-8000-000000000001",
};
const ARCHIVE: SpecMessageContext = {
  ...LIVE,
  source: { kind: "archive", untimedProfileAt: 42, untimedEventAt: NOW - 60_000 },
  dedupWindowMs: 0,
};
const iso = (t: number) => new Date(t).toISOString();

function operations(message: unknown, context = LIVE): QueuedOperation[] {
  const parsed = parseSpecMessage(message, context);
  if (!parsed.ok) throw new Error(problemText(parsed.problems));
  return parsed.value;
}

function refusal(message: unknown, context = LIVE): string {
  const parsed = parseSpecMessage(message, context);
  if (parsed.ok) throw new Error(`accepted: ${JSON.stringify(parsed.value)}`);
  return problemText(parsed.problems);
}

const profileOperation = (queued: QueuedOperation | undefined) =>
  queued?.queue === "profile-operations" ? queued.operation : null;
const event = (queued: QueuedOperation | undefined) => (queued?.queue === "events" ? queued.event : null);

describe("parseSpecMessage: identify", () => {
  it("makes a profile of userId, traits.email, the other traits as data, and the reserved keys of context", () => {
    const [identify, ...rest] = operations({
      type: "identify",
      userId: "u-1",
      anonymousId: "anon-1",
      traits: { email: "ada@example.com", phone: "+15550100", plan: "pro", timezone: "UTC" },
      context: {
        locale: "fr-FR",
        timezone: "Europe/Paris",
        userAgent: "Mozilla/5.0",
        device: { token: "apns-token-1" },
        os: { name: "iOS" },
      },
      timestamp: iso(NOW - 1000),
    });
    expect(rest).toEqual([]);
    expect(profileOperation(identify)).toMatchObject({
      projectId: 7,
      id: "u-1",
      email: "ada@example.com",
      phoneNumber: "+15550100",
      // The SDK's context wins over a trait of the same name, as both destinations write it last.
      data: { plan: "pro", language: "fr-FR", timezone: "Europe/Paris", userAgent: "Mozilla/5.0" },
      channels: [{ type: "push", address: "apns-token-1", platform: "iOS" }],
      t: NOW,
    });
  });

  it("names the user by anonymousId without a userId, and reads RudderStack's context.traits", () => {
    const [identify] = operations({
      type: "identify",
      userId: null,
      anonymousId: "anon-1",
      context: { traits: { email: "grace@example.com", plan: "free" } },
    });
    expect(profileOperation(identify)).toMatchObject({
      id: "anon-1",
      email: "grace@example.com",
      data: { plan: "free" },
    });
  });

  it("keeps a phone that is no phone number text as data", () => {
    const [identify] = operations({ type: "identify", userId: "u-1", traits: { phone: 5550100 } });
    expect(profileOperation(identify)).toMatchObject({ data: { phone: 5550100 } });
    expect(profileOperation(identify)).not.toHaveProperty("phoneNumber");
  });

  it("words a refusal in the message's fields", () => {
    expect(refusal({ type: "identify", traits: { email: "ada@example.com" } })).toBe(
      "userId or anonymousId is required",
    );
    expect(refusal({ type: "identify", userId: "u-1", traits: { email: "not an email" } })).toMatch(
      /^traits\.email must be/,
    );
    expect(refusal({ type: "identify", userId: "u-1", traits: "plan=pro" })).toBe("traits must be a JSON object");
    expect(refusal({ type: "identify", userId: { id: 1 } })).toMatch(/^userId /);
  });
});

describe("parseSpecMessage: track, page and screen", () => {
  it("makes an event of a track, properties as data, named by its messageId as the API's message_id", () => {
    const message = {
      type: "track",
      userId: "u-1",
      event: "Order Completed",
      properties: { total: 30 },
      messageId: "node-next-1-abc",
      timestamp: iso(NOW - 5000),
    };
    const [first] = operations(message);
    const [again] = operations({ ...message, timestamp: iso(NOW - 4000) }, { ...LIVE, newEventId: () => "another" });
    expect(event(first)).toMatchObject({
      userId: "u-1",
      name: "Order Completed",
      data: { total: 30 },
      t: NOW - 5000,
      receivedAt: NOW,
      eventId: namedEventId("message", "node-next-1-abc"),
    });
    // Sent twice, it is one event: the same key and window as the API's track with that message_id.
    const live = parseOperation(
      "track",
      { identity: { id: "u-1" }, event_name: "x", extras: { message_id: "node-next-1-abc" } },
      { ...LIVE, eventId: "e" },
    );
    if (!live.ok || live.value.queue !== "events") throw new Error("the live track is refused");
    expect(event(first)?.dedupKey).toBe(live.value.event.dedupKey);
    expect(event(again)?.dedupKey).toBe(event(first)?.dedupKey);
    expect(event(again)?.eventId).toBe(event(first)?.eventId);
  });

  it("keeps a UUID messageId as the event's id, and gives an event without one the context's", () => {
    const uuid = "6F1C7A52-3B8E-4E55-9B0A-0C8F1E2D3A4B";
    expect(event(operations({ type: "track", userId: "u", event: "e", messageId: uuid })[0])?.eventId).toBe(
      uuid.toLowerCase(),
    );
    const [plain] = operations({ type: "track", userId: "u", event: "e" });
    expect(event(plain)).toMatchObject({ eventId: LIVE.newEventId(), t: NOW });
    expect(event(plain)?.dedupWindowMs).toBe(300_000);
  });

  it("opts a user out and back in for events named unsubscribe and resubscribe, storing no event", () => {
    expect(operations({ type: "track", userId: "u-1", event: "Unsubscribe" }).map(profileOperation)).toEqual([
      expect.objectContaining({ op: "subscription", id: "u-1", unsubscribed: true }),
    ]);
    expect(operations({ type: "track", userId: "u-1", event: "resubscribe" }).map(profileOperation)).toEqual([
      expect.objectContaining({ op: "subscription", unsubscribed: false }),
    ]);
    expect(event(operations({ type: "track", userId: "u-1", event: "Unsubscribed from Weekly" })[0])).toMatchObject({
      name: "Unsubscribed from Weekly",
    });
  });

  it("names page and screen events as RudderStack's destination does", () => {
    const name = (message: object) => event(operations(message)[0])?.name;
    expect(name({ type: "page", userId: "u", name: "Home", properties: { category: "Docs", url: "/" } })).toBe(
      "Viewed Docs Home Page",
    );
    expect(name({ type: "page", userId: "u", category: "Docs" })).toBe("Viewed Docs Page");
    expect(name({ type: "page", anonymousId: "a" })).toBe("Viewed Page");
    expect(name({ type: "screen", userId: "u", name: "Settings" })).toBe("Viewed Settings Screen");
    expect(event(operations({ type: "page", userId: "u", properties: { url: "/" } })[0])?.data).toEqual({ url: "/" });
  });

  it("adds or removes tags as either destination's integrations option asks", () => {
    const tags = (integrations: object) =>
      operations({ type: "track", userId: "u-1", event: "Upgraded", integrations }).map(profileOperation)[1];
    expect(tags({ vero: { tags: { add: ["vip"], remove: ["trial"] } } })).toMatchObject({
      op: "tags",
      add: ["vip"],
      remove: ["trial"],
    });
    expect(tags({ Vero: { tags: { action: "remove", tags: ["trial"] } } })).toMatchObject({
      add: [],
      remove: ["trial"],
    });
    expect(tags({ Vero: true })).toBeUndefined();
  });

  it("refuses a track without an event, naming it", () => {
    expect(refusal({ type: "track", userId: "u-1" })).toMatch(/^event is required/);
    expect(refusal({ type: "track", userId: "u-1", event: "e", properties: [1] })).toMatch(/^properties /);
  });
});

describe("parseSpecMessage: group and alias", () => {
  it("edits the user's group data key with the group's traits and id, leaving its email out", () => {
    const [edit] = operations({
      type: "group",
      userId: "u-1",
      groupId: "g-1",
      traits: { name: "Initech", email: "billing@initech.example" },
    });
    expect(profileOperation(edit)).toMatchObject({
      op: "edit",
      id: "u-1",
      changes: { group: { name: "Initech", id: "g-1" } },
    });
  });

  it("reidentifies previousId as userId, and an alias onto the same id queues nothing", () => {
    expect(operations({ type: "alias", previousId: "anon-1", userId: "u-1" }).map(profileOperation)).toEqual([
      expect.objectContaining({ op: "reidentify", id: "anon-1", newId: "u-1" }),
    ]);
    expect(operations({ type: "alias", previousId: "u-1", userId: "u-1" })).toEqual([]);
    expect(refusal({ type: "alias", userId: "u-1" })).toBe("previousId is required");
  });
});

describe("parseSpecMessage: times", () => {
  it("corrects a live event's timestamp for the client's clock by its sentAt, as Segment does", () => {
    // The client's clock is an hour fast: it sent at 13:00:00 what happened 10 s before.
    const at = (fields: object, context = LIVE) =>
      event(operations({ type: "track", userId: "u", event: "e", ...fields }, context)[0])?.t;
    const happened = { timestamp: "2026-06-01T12:59:50.000Z" };
    expect(at({ ...happened, sentAt: "2026-06-01T13:00:00.000Z" })).toBe(NOW - 10_000);
    const batch = { ...LIVE, source: { kind: "live" as const, batchSentAt: Date.parse("2026-06-01T13:00:00.000Z") } };
    expect(at({ originalTimestamp: happened.timestamp }, batch)).toBe(NOW - 10_000);
    // Without sentAt the time is as given, and no later than the receipt; without a time, the receipt.
    expect(at({ timestamp: iso(NOW - 10_000) })).toBe(NOW - 10_000);
    expect(at({ timestamp: iso(NOW + 120_000) })).toBe(NOW);
    expect(at({})).toBe(NOW);
    expect(refusal({ type: "page", userId: "u", timestamp: iso(NOW + 600_000) })).toBe(
      "timestamp must not be more than 5 minutes in the future",
    );
    expect(refusal({ type: "track", userId: "u", event: "e", timestamp: "yesterday" })).toMatch(
      /^timestamp must be an ISO 8601/,
    );
  });

  it("stamps a live message's profile operations when it was received, in its order in the batch", () => {
    const [identify, tags] = operations({
      type: "identify",
      userId: "u",
      timestamp: iso(NOW - 10_000),
      integrations: { vero: { tags: { add: ["vip"] } } },
    }).map(profileOperation);
    expect([identify?.t, tags?.t]).toEqual([NOW, NOW]);
  });

  it("takes an archive's timestamp as it is, and its defaults for messages without one", () => {
    const at = NOW - 86_400_000;
    expect(
      profileOperation(operations({ type: "identify", userId: "u", timestamp: iso(at), sentAt: iso(NOW) }, ARCHIVE)[0])
        ?.t,
    ).toBe(at);
    expect(event(operations({ type: "track", userId: "u", event: "e", timestamp: iso(at) }, ARCHIVE)[0])).toMatchObject(
      {
        t: at,
        receivedAt: at,
      },
    );
    expect(profileOperation(operations({ type: "identify", userId: "u" }, ARCHIVE)[0])?.t).toBe(42);
    expect(event(operations({ type: "page", userId: "u" }, ARCHIVE)[0])?.t).toBe(NOW - 60_000);
  });
});

describe("parseSpecMessage: messages", () => {
  it("takes the type from the path of a single call, and refuses an unknown one or a message larger than 256 KiB", () => {
    expect(parseSpecMessage({ userId: "u", event: "e" }, LIVE, "track")).toMatchObject({ ok: true });
    expect(refusal({ type: "order", userId: "u" })).toBe(
      'type must be one of "identify", "track", "page", "screen", "group", "alias"; it is "order"',
    );
    expect(refusal([1])).toBe("a message must be a JSON object");
    const big = { type: "track", userId: "u", event: "e", properties: { text: "x".repeat(300_000) } };
    expect(refusal(big)).toBe("message is larger than 256 KiB, the most a single call's body may hold");
  });
});

describe("specBatchMessages", () => {
  it("reads the batch's messages, with the batch's context and integrations under each message's own", () => {
    const batch = specBatchMessages({
      batch: [{ type: "track", context: { locale: "fr" } }, "not an object"],
      context: { locale: "en", library: { name: "x" } },
      sentAt: "2026-06-01T12:00:00Z",
    });
    expect(batch).toEqual({
      ok: true,
      value: {
        messages: [{ type: "track", context: { locale: "fr", library: { name: "x" } } }, "not an object"],
        sentAt: Date.parse("2026-06-01T12:00:00Z"),
      },
    });
  });

  it("refuses a body that is no batch, or one of more messages than any SDK sends", () => {
    expect(specBatchMessages({ type: "track" })).toMatchObject({ ok: false });
    expect(specBatchMessages([])).toMatchObject({ ok: false });
    expect(specBatchMessages({ batch: [], sentAt: "now" })).toMatchObject({
      ok: false,
      problems: [{ path: "sentAt" }],
    });
    const many = specBatchMessages({ batch: Array.from({ length: MAX_SPEC_BATCH_MESSAGES + 1 }, () => ({})) });
    expect(many.ok ? null : problemText(many.problems)).toBe(
      `batch must hold at most ${MAX_SPEC_BATCH_MESSAGES} messages; it holds ${MAX_SPEC_BATCH_MESSAGES + 1}`,
    );
  });
});
