import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestProject } from "../support/project";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";
import { EVENT_REQUESTS } from "./event-requests";
import { replay } from "./replay";

const SUCCESS = { status: 200, body: { status: 200, message: "Success." } };

let stack: TestStack;
let base: string;
beforeAll(async () => {
  stack = await createTestStack("event_replay");
  base = (await stack.gateway()).url;
  await stack.worker();
});
afterAll(() => stack.close());

interface ShownEvent {
  id: string;
  event_name: string;
  data: Record<string, unknown>;
  source: string | null;
  created_at: string;
  received_at: string;
}

interface EventsRead {
  data: ShownEvent[];
  next_cursor: string | null;
}

/** The events read of one user: what it answers with 200, or undefined for any other status. */
async function readEvents(user: string, apiKey: string): Promise<EventsRead | undefined> {
  const response = await fetch(`${base}/api/v2/users/${encodeURIComponent(user)}/events`, {
    headers: { authorization: apiKey },
  });
  return response.status === 200 ? ((await response.json()) as EventsRead) : undefined;
}

/** Waits until the read shows an event named `eventName`, and returns the read as it then stands. */
async function readOnceStored(user: string, apiKey: string, eventName: string) {
  return waitFor(`event '${eventName}' of ${user}`, async () => {
    const read = await readEvents(user, apiKey);
    return read?.data.some((event) => event.event_name === eventName) ? read : undefined;
  }).catch(() => readEvents(user, apiKey));
}

const cases = EVENT_REQUESTS.map((r) => [`${r.client}: ${r.name}`, r] as const);

describe("events track, as real Vero clients send it", () => {
  it("replays requests of every client, each naming its source", () => {
    for (const replayed of EVENT_REQUESTS) expect(replayed.source, replayed.name).not.toBe("");
    expect(new Set(EVENT_REQUESTS.map((r) => r.name)).size).toBe(EVENT_REQUESTS.length);
    for (const client of ["rudder-transformer", "tracking.js", "vero-gem", "n8n", "vero-php"]) {
      expect(
        EVENT_REQUESTS.some((r) => r.client.startsWith(client)),
        client,
      ).toBe(true);
    }
    for (const replayed of EVENT_REQUESTS) expect(replayed.path, replayed.name).toMatch(/^\/api\/v2\/events\/track/);
  });

  it.each(cases)("accepts %s", async (_, replayed) => {
    const project = await createTestProject(stack.db.sql, replayed.client);
    expect(await replay(base, replayed, project.authToken)).toEqual(SUCCESS);
  });

  // Each request gets a project of its own, so that what the read shows came from it alone.
  it.each(cases)("stores %s", async (_, replayed) => {
    const project = await createTestProject(stack.db.sql, replayed.client);
    expect(await replay(base, replayed, project.authToken)).toEqual(SUCCESS);

    const read = await readOnceStored(replayed.user, project.apiKey, replayed.expect.event_name);
    expect(read, `events of ${replayed.user}`).toBeDefined();
    expect(read?.next_cursor).toBeNull();
    expect(read?.data).toHaveLength(1);
    const [event] = read?.data ?? [];
    expect(event).toMatchObject({
      id: expect.any(String),
      event_name: replayed.expect.event_name,
      created_at: expect.any(String),
      received_at: expect.any(String),
    });
    if (replayed.expect.data !== undefined) expect(event?.data).toMatchObject(replayed.expect.data);
    expect(JSON.stringify(read)).not.toContain(project.authToken);
  });
});
