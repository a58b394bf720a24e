import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ExportedEventLine, ExportedProfileLine, Profile } from "@cm/domain";
import { childEnv } from "../support/env";
import { runCtl } from "../support/processes";
import { createTestProject } from "../support/project";
import { createTestStack, type TestStack } from "../support/services";
import { sendAccepted } from "../support/users-api";
import { waitFor } from "../support/wait";

let stack: TestStack;
let base: string;
let env: NodeJS.ProcessEnv;

const send = (path: string, body: object, method?: string) =>
  sendAccepted(base, stack.project.authToken, path, body, method);

async function read(id: string): Promise<Profile | null> {
  const response = await fetch(`${base}/api/v2/users/${encodeURIComponent(id)}`, {
    headers: { authorization: stack.project.apiKey },
  });
  return response.status === 200 ? ((await response.json()) as Profile) : null;
}

async function exportLines(args: string[]) {
  const result = await runCtl(env, ["export", "--project", String(stack.project.id), ...args]);
  expect(result.code, result.stderr).toBe(0);
  return {
    lines: result.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as ExportedProfileLine | ExportedEventLine),
    summary: JSON.parse(result.stderr.trim()) as { profiles: number; events: number },
  };
}

const USERS = 30;

beforeAll(async () => {
  stack = await createTestStack("ctl_export");
  base = (await stack.gateway()).url;
  await stack.worker();
  env = childEnv(stack.config);
  const news = await stack.project.topic("News", "subscribed");
  for (let n = 0; n < USERS; n += 1) {
    await send("/users/track", { id: `ex-${n}`, email: `ex-${n}@example.com`, data: { n } });
  }
  await send("/users/track", { email: "only@example.com" });
  await send("/users/tags/edit", { id: "ex-1", add: ["vip"] }, "PUT");
  await send("/users/unsubscribe", { id: "ex-2" });
  await send("/users/track", { id: "ex-3", topics: [{ id: news, status: "unsubscribed" }] } as object);
  await send("/users/reidentify", { id: "ex-4", new_id: "ex-4b" }, "PUT");
  await send("/users/delete", { id: "ex-5" });
  for (const name of ["Viewed", "Bought"]) await send("/events/track", { identity: { id: "ex-6" }, event_name: name });
  await waitFor("every operation applied", async () => {
    const [renamed, deleted, tagged] = await Promise.all([read("ex-4b"), read("ex-5"), read("ex-1")]);
    const events = await fetch(`${base}/api/v2/users/ex-6/events`, {
      headers: { authorization: stack.project.apiKey },
    });
    return renamed?.id === "ex-4b" &&
      deleted === null &&
      tagged?.tags.includes("vip") === true &&
      ((await events.json()) as { data: unknown[] }).data.length === 2
      ? true
      : undefined;
  });
});
afterAll(() => stack.close());

describe("ctl export", () => {
  it("prints every profile once, as the profile read shows it, each followed by its events", async () => {
    const { lines, summary } = await exportLines(["--events"]);
    const profiles = lines.filter((line): line is ExportedProfileLine => line.type === "profile");
    expect(profiles.map((line) => line.id).sort()).toEqual(
      [
        ...Array.from({ length: USERS }, (_, n) => `ex-${n}`).filter((id) => id !== "ex-4" && id !== "ex-5"),
        "ex-4b",
        "only@example.com",
      ].sort(),
    );
    expect(summary).toEqual({ profiles: USERS, events: 2 });
    for (const line of profiles) {
      const profile = (await read(line.id)) as Profile;
      expect(line).toEqual({
        type: "profile",
        id: profile.id,
        previous_ids: line.id === "ex-4b" ? ["ex-4"] : [],
        email: profile.email,
        phone_number: profile.phone_number,
        channels: profile.channels,
        data: profile.data,
        tags: profile.tags,
        unsubscribed: profile.unsubscribed,
        topics: Object.fromEntries(
          profile.topics.filter((topic) => topic.source === "explicit").map((topic) => [topic.name, topic.status]),
        ),
        created_at: profile.created_at,
        updated_at: profile.updated_at,
      });
    }
    const at = lines.findIndex((line) => line.type === "profile" && line.id === "ex-6");
    expect(lines.slice(at + 1, at + 3)).toEqual([
      expect.objectContaining({ type: "event", user_id: "ex-6", event_name: "Viewed" }),
      expect.objectContaining({ type: "event", user_id: "ex-6", event_name: "Bought" }),
    ]);
  });

  it("exports events of any year the API takes as they were sent", async () => {
    const project = await createTestProject(stack.db.sql, "old_events");
    const times = ["0030-01-01T00:00:00.000Z", "0049-06-01T00:00:00.000Z", "1969-12-31T23:59:59.000Z"];
    for (const created_at of times) {
      const body = { identity: { id: "then" }, event_name: "Then", data: { created_at }, extras: { created_at } };
      await sendAccepted(base, project.authToken, "/events/track", body);
    }
    const run = () => runCtl(env, ["export", "--project", String(project.id), "--events"]);
    const result = await waitFor("the events stored and exported", async () => {
      const ran = await run();
      return ran.code === 0 && ran.stdout.trim().split("\n").length === 1 + times.length ? ran : undefined;
    });
    const lines = result.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as ExportedProfileLine | ExportedEventLine);
    expect(lines.flatMap((line) => (line.type === "event" ? [line.created_at] : []))).toEqual(times);
    expect(lines[0]).toMatchObject({ type: "profile", id: "then", created_at: times[0] });
  });

  it("leaves events out without --events, writes to --output, and refuses an unknown project", async () => {
    const { lines } = await exportLines([]);
    expect(lines.every((line) => line.type === "profile")).toBe(true);
    const unknown = await runCtl(env, ["export", "--project", "999999"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("project 999999 does not exist");
  });
});
