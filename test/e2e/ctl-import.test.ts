import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ExportedEventLine, ExportedProfileLine, Profile } from "@cm/domain";
import { eventsQueues, profileOperationsQueues, producerConnection } from "@cm/queue";
import { childEnv } from "../support/env";
import { runCtl, startChild } from "../support/processes";
import { createTestProject, type TestProject } from "../support/project";
import { createTestStack, type TestStack } from "../support/services";
import { drained } from "../support/queue";
import { waitFor } from "../support/wait";
import { layoutTimeout } from "../support/database";

let stack: TestStack;
let base: string;
let env: NodeJS.ProcessEnv;
let dir: string;

async function send(project: TestProject, path: string, body: object, method = "POST") {
  const response = await fetch(`${base}/api/v2${path}?auth_token=${project.authToken}`, {
    method,
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
}

async function read(project: TestProject, id: string): Promise<Profile | null> {
  const response = await fetch(`${base}/api/v2/users/${encodeURIComponent(id)}`, {
    headers: { authorization: project.apiKey },
  });
  return response.status === 200 ? ((await response.json()) as Profile) : null;
}

type Line = ExportedProfileLine | ExportedEventLine;

const order = (line: Omit<Line, "updated_at">) =>
  line.type === "profile" ? `${line.id}\0` : `${line.user_id}\0${line.created_at}\0${line.id}`;

/**
 * A project's export, as its profile reads show it, by id (an export goes in key order, and keys
 * are hashed with a secret of each project); `updated_at` is when a row was last written, so it
 * is left out.
 */
async function exported(project: TestProject): Promise<Omit<Line, "updated_at">[]> {
  const result = await runCtl(env, ["export", "--project", String(project.id), "--events"]);
  expect(result.code, result.stderr).toBe(0);
  return result.stdout
    .trim()
    .split("\n")
    .filter((line) => line !== "")
    .map((text) => {
      const line = JSON.parse(text) as Line;
      if (line.type === "event") return line;
      const { updated_at: _updated, ...rest } = line;
      return rest;
    })
    .sort((a, b) => order(a).localeCompare(order(b)));
}

async function importFile(project: TestProject, args: string[]) {
  const result = await runCtl(env, ["import", "--project", String(project.id), ...args]);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stderr.trim().split("\n").pop() as string) as {
    imported: number;
    rejected: number;
    skipped: number;
  };
}

/** Until no job waits in either batch queue (nothing left to apply). */
/** Every job the imports queued applied. */
async function importsApplied(): Promise<void> {
  const connection = producerConnection(stack.config);
  const { queuePrefix, intakeQueueShards } = stack.config;
  const queues = [
    ...profileOperationsQueues(connection, queuePrefix, intakeQueueShards),
    ...eventsQueues(connection, queuePrefix, intakeQueueShards),
  ];
  try {
    await drained(queues, layoutTimeout(120_000));
  } finally {
    await Promise.all(queues.map((queue) => queue.close()));
    connection.disconnect();
  }
}

beforeAll(async () => {
  stack = await createTestStack("ctl_import");
  base = (await stack.gateway()).url;
  await stack.worker();
  env = childEnv(stack.config);
  dir = mkdtempSync(join(tmpdir(), "ctl-import-"));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await stack.close();
});

describe("ctl import", () => {
  it("imports an export into an empty project, giving the same profile reads (round trip)", async () => {
    const a = stack.project;
    const news = await a.topic("News", "subscribed");
    await a.topic("Offers", "unsubscribed");
    for (let n = 0; n < 20; n += 1) {
      await send(a, "/users/track", { id: `rt-${n}`, email: `rt-${n}@example.com`, data: { n, nested: { k: [n] } } });
    }
    await send(a, "/users/track", { email: "only@example.com", data: { plan: "free" } });
    await send(a, "/users/track", {
      id: "rt-1",
      channels: [{ type: "push", address: "tok-1", platform: "ios" }],
      preferences: { topics: [{ id: news, status: "unsubscribed" }] },
    });
    await send(a, "/users/tags/edit", { id: "rt-2", add: ["vip", "beta"] }, "PUT");
    await send(a, "/users/unsubscribe", { id: "rt-3" });
    await send(a, "/users/reidentify", { id: "rt-4", new_id: "rt-4b" }, "PUT");
    await send(a, "/users/delete", { id: "rt-5" });
    for (const name of ["Viewed", "Bought", "Viewed"]) {
      await send(a, "/events/track", { identity: { id: "rt-6" }, event_name: name, data: { name } });
    }
    await send(a, "/events/track", { identity: { id: "rt-4" }, event_name: "Renamed" });
    await importsApplied();
    const source = await exported(a);
    expect(source.filter((line) => line.type === "event")).toHaveLength(3);

    const file = join(dir, "round-trip.ndjson");
    const result = await runCtl(env, ["export", "--project", String(a.id), "--events", "--output", file]);
    expect(result.code, result.stderr).toBe(0);
    const b = await createTestProject(stack.db.sql, "Round trip");
    await b.topic("News", "subscribed");
    await b.topic("Offers", "unsubscribed");
    const summary = await importFile(b, [file]);
    expect(summary).toMatchObject({ imported: source.length, rejected: 0, skipped: 0 });
    await importsApplied();
    expect(await exported(b)).toEqual(source);
    for (const id of ["rt-1", "rt-2", "rt-3", "rt-4", "rt-4b", "rt-5", "only@example.com"]) {
      const [inA, inB] = await Promise.all([read(a, id), read(b, id)]);
      const topics = (profile: Profile | null) => profile?.topics.map(({ id: _id, ...topic }) => topic);
      expect({ ...inB, topics: topics(inB), updated_at: null }).toEqual({
        ...inA,
        topics: topics(inA),
        updated_at: null,
      });
    }
  });

  it("reads CSV with column flags, refuses bad rows into the rejects file, and never beats live data", async () => {
    const c = await createTestProject(stack.db.sql, "CSV");
    await send(c, "/users/track", { id: "gone", email: "gone@example.com" });
    await waitFor("gone applied", async () => ((await read(c, "gone")) === null ? undefined : true));
    await send(c, "/users/delete", { id: "gone" });
    await waitFor("gone erased", async () => ((await read(c, "gone")) === null ? true : undefined));

    const file = join(dir, "people.csv");
    writeFileSync(
      file,
      [
        "user_id,mail,plan,city",
        "u1,u1@example.com,free,Oslo",
        "u2,u2@example.com,free,",
        'u1,,pro,"Bergen, Norway"',
        "gone,gone@example.com,back,",
        "bad,not-an-email,x,y",
        "short,s@example.com",
      ].join("\n") + "\n",
    );
    const args = [file, "--id-column", "user_id", "--email-column", "mail"];
    const summary = await importFile(c, args);
    expect(summary).toEqual(expect.objectContaining({ imported: 4, rejected: 2, skipped: 0 }));
    const rejects = readFileSync(`${file}.rejects.ndjson`, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(rejects).toEqual([
      {
        line: 6,
        reason: expect.stringContaining("email"),
        input: { user_id: "bad", mail: "not-an-email", plan: "x", city: "y" },
      },
      {
        line: 7,
        reason: "the row has 2 fields where the header has 4",
        input: expect.objectContaining({ user_id: "short" }),
      },
    ]);
    await importsApplied();
    const u1 = await read(c, "u1");
    expect(u1).toMatchObject({ id: "u1", email: "u1@example.com", data: { plan: "pro", city: "Bergen, Norway" } });
    expect(await read(c, "gone")).toBeNull();

    // The same command again: its state file says it is done.
    expect(await importFile(c, args)).toEqual(expect.objectContaining({ imported: 0, skipped: 6 }));
    // A live update, then the whole file again: the file's values lose.
    await send(c, "/users/edit", { id: "u2", changes: { plan: "live" } }, "PUT");
    await waitFor("the live edit", async () => ((await read(c, "u2"))?.data.plan === "live" ? true : undefined));
    expect(await importFile(c, [...args, "--restart"])).toEqual(expect.objectContaining({ imported: 4, skipped: 0 }));
    await importsApplied();
    expect((await read(c, "u2"))?.data).toEqual({ plan: "live" });
    expect(await read(c, "gone")).toBeNull();
  });

  it("reads tags and opt-outs of Vero's and Customer.io's CSV, and of the columns the flags name", async () => {
    const v = await createTestProject(stack.db.sql, "Vero CSV");
    const vero = join(dir, "vero.csv");
    // Vero's tags cell: semicolons between tags, its reserved tag `unsubscribed` an unsubscribe.
    writeFileSync(vero, "id,email,tags,plan\nv1,v1@example.com,vip;beta,pro\nv2,,unsubscribed;news,free\n");
    expect(await importFile(v, [vero, "--format", "vero"])).toMatchObject({ imported: 2, rejected: 0 });

    const c = await createTestProject(stack.db.sql, "Customer.io CSV");
    const customerio = join(dir, "customerio.csv");
    writeFileSync(
      customerio,
      [
        "id,email,cio_id,unsubscribed,labels,plan",
        'c1,c1@example.com,a1,true,"[""vip"",""early bird""]",pro',
        "c2,c2@example.com,a2,false,,free",
        "c3,c3@example.com,a3,maybe,,free",
      ].join("\n"),
    );
    const summary = await importFile(c, [customerio, "--format", "customerio", "--tags-column", "labels"]);
    expect(summary).toMatchObject({ imported: 2, rejected: 1 });
    const [reject] = readFileSync(`${customerio}.rejects.ndjson`, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(reject).toMatchObject({
      line: 4,
      reason: 'unsubscribed must be true, false, 1, 0, yes or no; it is "maybe"',
    });
    await importsApplied();

    expect(await read(v, "v1")).toMatchObject({ tags: ["beta", "vip"], unsubscribed: false, data: { plan: "pro" } });
    expect(await read(v, "v2")).toMatchObject({ tags: ["news"], unsubscribed: true, data: { plan: "free" } });
    expect(await read(c, "c1")).toMatchObject({
      tags: ["early bird", "vip"],
      unsubscribed: true,
      data: { plan: "pro" },
    });
    expect(await read(c, "c2")).toMatchObject({ tags: [], unsubscribed: false, data: { plan: "free" } });
    expect(await read(c, "c3")).toBeNull();
  });

  it("imports Segment's messages, one a line, as the /v1 routes read them, readable as profiles and events", async () => {
    const s = await createTestProject(stack.db.sql, "Segment");
    const at = Date.now() - 3_600_000;
    const time = (n: number) => new Date(at + n * 1000).toISOString();
    const order = {
      type: "track",
      userId: "seg-1",
      event: "Order Completed",
      properties: { total: 30, sku: "A-1" },
      timestamp: time(1),
      messageId: "m-1",
    };
    const messages = [
      {
        type: "identify",
        userId: "seg-1",
        traits: { email: "ada@example.com", phone: "+15550100", plan: "pro" },
        context: { locale: "en-GB" },
        timestamp: time(0),
        messageId: "m-0",
      },
      order,
      // Segment delivers at least once: a message twice is one event.
      order,
      { type: "track", anonymousId: "anon-1", event: "Viewed", properties: { path: "/" }, timestamp: time(2) },
      { type: "page", userId: "seg-1", name: "Home", properties: { url: "/" }, timestamp: time(3), messageId: "m-3" },
      { type: "track", userId: "seg-1", timestamp: time(4) },
    ];
    const file = join(dir, "segment.ndjson");
    writeFileSync(file, messages.map((message) => JSON.stringify(message)).join("\n"));
    expect(await importFile(s, [file, "--format", "segment"])).toMatchObject({ imported: 5, rejected: 1 });
    expect(JSON.parse(readFileSync(`${file}.rejects.ndjson`, "utf8"))).toMatchObject({
      line: 6,
      reason: "event is required and must be a string of 1 to 255 characters",
    });
    await importsApplied();

    expect(await read(s, "seg-1")).toMatchObject({
      email: "ada@example.com",
      phone_number: "+15550100",
      data: { plan: "pro", language: "en-GB" },
      event_count: 2,
    });
    const events = async (id: string) => {
      const response = await fetch(`${base}/api/v2/users/${id}/events`, { headers: { authorization: s.apiKey } });
      expect(response.status).toBe(200);
      return ((await response.json()) as { data: object[] }).data;
    };
    expect(await events("seg-1")).toEqual([
      expect.objectContaining({ event_name: "Viewed Home Page", data: { url: "/" }, created_at: time(3) }),
      expect.objectContaining({ event_name: "Order Completed", data: { total: 30, sku: "A-1" }, created_at: time(1) }),
    ]);
    expect(await events("anon-1")).toEqual([
      expect.objectContaining({ event_name: "Viewed", data: { path: "/" }, created_at: time(2) }),
    ]);
  });

  it("imports events from CSV once, however often the file is imported", async () => {
    const d = await createTestProject(stack.db.sql, "Events CSV");
    const file = join(dir, "events.csv");
    const at = Date.now() - 3_600_000;
    const rows = Array.from(
      { length: 50 },
      (_, n) => `e-${n % 5},Opened,${new Date(at + n * 1000).toISOString()},${n}`,
    );
    writeFileSync(file, ["id,event,time,n", ...rows].join("\n"));
    const args = [file, "--event-name-column", "event", "--stamp-column", "time"];
    expect(await importFile(d, args)).toEqual(expect.objectContaining({ imported: 50, rejected: 0 }));
    expect(await importFile(d, [...args, "--restart"])).toEqual(expect.objectContaining({ imported: 50 }));
    await importsApplied();
    const [{ n }] = await stack.db.sql<{ n: number }[]>`
      SELECT count(*)::integer AS n FROM events WHERE project_id = ${d.id}`;
    expect(n).toBe(50);
    expect((await read(d, "e-1"))?.event_count).toBe(10);
  });

  it(
    "continues after a kill where it stopped, and the result equals an uninterrupted import",
    async () => {
      const file = join(dir, "resume.ndjson");
      const at = Date.now() - 3_600_000;
      const lines: string[] = [];
      for (let n = 0; n < 15_000; n += 1) {
        const id = `r-${n % 5_000}`;
        lines.push(
          JSON.stringify({
            type: "profile",
            id,
            email: `${id}@example.com`,
            data: { n },
            tags: n % 3 ? [] : [`t${n}`],
          }),
        );
        lines.push(
          JSON.stringify({
            type: "event",
            user_id: id,
            event_name: "Seen",
            data: { n },
            created_at: new Date(at + n).toISOString(),
          }),
        );
      }
      writeFileSync(file, lines.join("\n"));
      const whole = await createTestProject(stack.db.sql, "Uninterrupted");
      expect(await importFile(whole, [file, "--state", join(dir, "whole.json")])).toMatchObject({ imported: 30_000 });

      const cut = await createTestProject(stack.db.sql, "Interrupted");
      const state = join(dir, "cut.json");
      const child = startChild("apps/ctl/dist/main.js", env, [
        "import",
        "--project",
        String(cut.id),
        file,
        "--state",
        state,
      ]);
      const killedAt = await waitFor(
        "a state file part of the way",
        async () => {
          try {
            const kept = JSON.parse(readFileSync(state, "utf8")) as { done: number; finished: boolean };
            if (kept.done > 0) {
              child.child.kill("SIGKILL");
              return kept;
            }
          } catch {
            // not written yet
          }
          await sleep(1);
          return undefined;
        },
        60_000,
      );
      await child.exited;
      expect(killedAt.finished).toBe(false);
      const resumed = await importFile(cut, [file, "--state", state]);
      expect(resumed.skipped).toBeGreaterThan(0);
      expect(resumed.skipped + resumed.imported).toBe(30_000);
      await importsApplied();
      const [left, right] = await Promise.all([exported(whole), exported(cut)]);
      expect(left).toHaveLength(5_000 + 15_000);
      expect(right).toEqual(left);
    },
    // Two imports of 30,000 lines, their jobs applied and two exports: minutes on a busy 2-core machine.
    layoutTimeout(180_000),
  );

  it("resumes stdin under --state only for the same input: another one is refused, never skipped", async () => {
    const p = await createTestProject(stack.db.sql, "Stdin");
    const state = join(dir, "stdin.json");
    const padding = "x".repeat(100);
    const lines = (prefix: string, from: number, to: number) =>
      Array.from({ length: to - from }, (_, n) =>
        JSON.stringify({ type: "profile", id: `${prefix}-${from + n}`, data: { padding } }),
      );
    const fromStdin = (input: string[], ...args: string[]) =>
      runCtl(env, ["import", "--project", String(p.id), "-", "--state", state, ...args], `${input.join("\n")}\n`);
    const summaryOf = (result: { code: number | null; stderr: string }) => {
      expect(result.code, result.stderr).toBe(0);
      return JSON.parse(result.stderr.trim().split("\n").pop() as string) as Record<string, unknown>;
    };

    const first = lines("a", 0, 20);
    expect(summaryOf(await fromStdin(first))).toMatchObject({ imported: 20, skipped: 0 });
    // Another export: its first KiB differs from the state's.
    const other = await fromStdin(lines("b", 0, 20));
    expect(other.code).toBe(1);
    expect(other.stderr).toContain("is of another import");
    // The same first KiB (15 lines of the first), then other records: refused once past them.
    const sameHead = [...first.slice(0, 15), ...lines("c", 15, 25)];
    expect(sameHead.slice(0, 15).join("\n").length).toBeGreaterThan(1024);
    const differing = await fromStdin(sameHead);
    expect(differing.code).toBe(1);
    expect(differing.stderr).toContain("is not the one the state file");
    // The same input grown: what was imported is skipped, the rest imported.
    expect(summaryOf(await fromStdin([...first, ...lines("a", 20, 25)]))).toMatchObject({ imported: 5, skipped: 20 });
    expect(summaryOf(await fromStdin(sameHead, "--restart"))).toMatchObject({ imported: 25, skipped: 0 });
    await importsApplied();
    for (const id of ["a-0", "a-24", "c-15", "c-24"]) expect(await read(p, id), id).not.toBeNull();
    expect(await read(p, "b-0")).toBeNull();
  });

  it("stores an event carrying its own id once, from any file and beside the same event sent live", async () => {
    const m = await createTestProject(stack.db.sql, "Message ids");
    const time = new Date(Date.now() - 3_600_000).toISOString();
    const track = (messageId: string, event: string) =>
      JSON.stringify({ type: "track", userId: "m-1", event, timestamp: time, messageId });
    // Segment's archives overlap: one message in two files (of other first KiBs).
    const archives = [
      [track("msg-1", "Opened"), track("msg-2", "Clicked")],
      [track("msg-3", "Bought"), track("msg-1", "Opened")],
    ];
    // The live track, as RudderStack's Vero destination sends it: its messageId as extras.message_id.
    await send(m, "/events/track", {
      identity: { id: "m-1" },
      event_name: "Shared",
      extras: { message_id: "msg-4", created_at: time },
    });
    archives.push([track("msg-4", "Shared")]);
    for (const [n, archive] of archives.entries()) {
      const file = join(dir, `archive-${n}.ndjson`);
      writeFileSync(file, archive.join("\n"));
      expect(await importFile(m, [file, "--format", "segment"])).toMatchObject({ imported: archive.length });
    }
    // A CSV's event ids (Vero's message_id) likewise, from two files.
    for (const [n, rows] of [["v-1,m-1,Read,a"], ["v-2,m-1,Replied,b", "v-1,m-1,Read,a"]].entries()) {
      const file = join(dir, `vero-events-${n}.csv`);
      writeFileSync(file, ["message_id,id,event,n,time", ...rows.map((row) => `${row},${time}`)].join("\n"));
      const args = ["--event-name-column", "event", "--event-id-column", "message_id", "--stamp-column", "time"];
      expect(await importFile(m, [file, ...args])).toMatchObject({ imported: rows.length });
    }
    await importsApplied();
    const names = await stack.db.sql<{ name: string }[]>`
      SELECT name FROM events WHERE project_id = ${m.id} ORDER BY name`;
    expect(names.map((row) => row.name)).toEqual(["Bought", "Clicked", "Opened", "Read", "Replied", "Shared"]);
  });

  it("refuses a state file of another source, and stdin without --state", async () => {
    const file = join(dir, "other.ndjson");
    writeFileSync(file, `${JSON.stringify({ type: "profile", id: "x" })}\n`);
    const state = join(dir, "cut.json");
    const other = await runCtl(env, ["import", "--project", String(stack.project.id), file, "--state", state]);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain("is of another import");
    const stdin = await runCtl(env, ["import", "--project", String(stack.project.id)]);
    expect(stdin.code).toBe(2);
    expect(stdin.stderr).toContain("--state FILE is required");
  });
});
