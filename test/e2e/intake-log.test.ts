import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { startGateway, type RunningGateway } from "@cm/gateway";
import { intakeLogKey } from "@cm/queue";
import type { IntakeLogEntry, IntakeLogPage } from "@cm/domain";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { childEnv } from "../support/env";
import { testLogger } from "../support/logs";
import { runCtl } from "../support/processes";
import { createTestProject, type TestProject } from "../support/project";
import { testRedis } from "../support/redis";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";
import { singleDoorLog } from "../../apps/gateway/src/intake-log/doors";
import { IntakeLogWriter } from "../../apps/gateway/src/intake-log/writer";

// docs/intake-log.md: GET /api/v2/intake-log over HTTP, through the real gateway, worker and ctl.

let stack: TestStack;
let base: string;
let dir: string;

beforeAll(async () => {
  stack = await createTestStack("intake_log");
  base = (await stack.gateway()).url;
  await stack.worker();
  dir = mkdtempSync(join(tmpdir(), "intake-log-"));
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await stack.close();
});

const basic = (writeKey: string) => `Basic ${Buffer.from(`${writeKey}:`).toString("base64")}`;

/** A users-API request with the token in the query string (Vero's), answered as it is. */
async function send(project: TestProject, path: string, body: unknown, method = "POST", at = base) {
  const response = await fetch(`${at}/api/v2${path}?auth_token=${project.authToken}`, {
    method,
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, detail: response.headers.get("x-error-detail"), body: await response.json() };
}

/** A /v1 request with the write key as HTTP Basic's user. */
async function sendSpec(project: TestProject, path: string, body: unknown) {
  const response = await fetch(`${base}/v1${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: basic(project.authToken) },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    body: (await response.json()) as { message?: string; refused?: { reason: string }[] },
  };
}

async function read(project: TestProject, query: Record<string, string> = {}, key = project.apiKey) {
  const response = await fetch(`${base}/api/v2/intake-log?${new URLSearchParams(query)}`, {
    headers: { authorization: `Bearer ${key}` },
  });
  return { status: response.status, body: (await response.json()) as IntakeLogPage & { errors?: unknown[] } };
}

/** Every entry from `after` on, page by page, until a page comes back empty. */
async function readAll(project: TestProject, query: Record<string, string> = {}, after: string | null = null) {
  const entries: IntakeLogEntry[] = [];
  let cursor = after;
  for (;;) {
    const page = await read(project, { ...query, ...(cursor === null ? {} : { after: cursor }) });
    expect(page.status).toBe(200);
    entries.push(...page.body.entries);
    cursor = page.body.next;
    if (page.body.entries.length === 0) return { entries, cursor };
  }
}

/** The log once it holds `count` entries (the gateway writes them a moment after their answers). */
const logOf = (project: TestProject, count: number, query: Record<string, string> = {}) =>
  waitFor(`${count} intake log entries`, async () => {
    const { entries } = await readAll(project, query);
    return entries.length >= count ? entries : undefined;
  });

const shown = ({ door, operation, outcome, status, reason, user_id }: IntakeLogEntry) => ({
  door,
  operation,
  outcome,
  status,
  reason,
  user_id,
});

describe("GET /api/v2/intake-log", () => {
  let doors: TestProject;
  let all: IntakeLogEntry[];
  /** The reasons the refused requests were answered with. */
  const answered: Record<string, string> = {};

  beforeAll(async () => {
    doors = await createTestProject(stack.db.sql, "doors");
    expect(
      (await send(doors, "/users/track", { id: "ada", email: "ada@example.com", data: { plan: "pro" } })).status,
    ).toBe(200);
    const badIdentify = await send(doors, "/users/track", { id: "ada", data: "not an object" });
    expect(badIdentify.status).toBe(400);
    answered.identify = badIdentify.detail as string;
    expect((await send(doors, "/events/track", { identity: { id: "ada" }, event_name: "Viewed" })).status).toBe(200);
    const batch = await send(doors, "/batch", {
      batch: [
        { type: "identify", id: "bo" },
        { type: "edit", id: "bo" },
      ],
    });
    expect(batch.status).toBe(200);
    answered.batch = (batch.body as { results: { message: string }[] }).results[1]?.message as string;
    expect((await sendSpec(doors, "/identify", { userId: "cy", traits: { plan: "free" } })).status).toBe(200);
    const specBatch = await sendSpec(doors, "/batch", {
      batch: [
        { type: "track", userId: "cy", event: "Opened" },
        { type: "track", event: "Nobody's" },
      ],
    });
    expect(specBatch.status).toBe(200);
    answered.v1 = specBatch.body.refused?.[0]?.reason as string;
    // The credential in the body is the project's secret: the entry shows the body without it.
    const inBody = await fetch(`${base}/api/v2/users/track.json`, {
      method: "POST",
      body: JSON.stringify({ id: "dee", auth_token: doors.authToken }),
    });
    expect(inBody.status).toBe(200);
    // A request whose credential is refused belongs to no project's log.
    const stranger = await fetch(`${base}/api/v2/users/track?auth_token=not-a-token`, {
      method: "POST",
      body: JSON.stringify({ id: "stranger" }),
    });
    expect(stranger.status).toBe(401);
    const file = join(dir, "messages.ndjson");
    writeFileSync(file, `${JSON.stringify({ type: "identify", userId: "ed", traits: { plan: "x" } })}\nnot json\n`);
    const imported = await runCtl(childEnv(stack.config), [
      "import",
      "--project",
      String(doors.id),
      file,
      "--format",
      "segment",
    ]);
    expect(imported.code, imported.stderr).toBe(0);
    all = await logOf(doors, 11);
  });

  it("notes each door's accepted and refused requests, oldest first, as they were answered", () => {
    expect(all.map(shown)).toEqual([
      { door: "users", operation: "identify", outcome: "accepted", status: 200, reason: null, user_id: "ada" },
      {
        door: "users",
        operation: "identify",
        outcome: "refused",
        status: 400,
        reason: answered.identify,
        user_id: "ada",
      },
      { door: "events", operation: "track", outcome: "accepted", status: 200, reason: null, user_id: "ada" },
      { door: "batch", operation: "identify", outcome: "accepted", status: 200, reason: null, user_id: "bo" },
      { door: "batch", operation: "edit", outcome: "refused", status: 400, reason: answered.batch, user_id: "bo" },
      { door: "v1", operation: "identify", outcome: "accepted", status: 200, reason: null, user_id: "cy" },
      { door: "v1", operation: "track", outcome: "accepted", status: 200, reason: null, user_id: "cy" },
      { door: "v1", operation: "track", outcome: "refused", status: 400, reason: answered.v1, user_id: null },
      { door: "users", operation: "identify", outcome: "accepted", status: 200, reason: null, user_id: "dee" },
      { door: "import", operation: "identify", outcome: "accepted", status: 200, reason: null, user_id: "ed" },
      {
        door: "import",
        operation: "import",
        outcome: "refused",
        status: 400,
        reason: expect.any(String),
        user_id: null,
      },
    ]);
    expect(answered.identify).toMatch(/data/);
    expect(answered.batch).toMatch(/changes/);
    expect(answered.v1).toMatch(/userId/);
    const [first] = all;
    expect(JSON.parse(first?.body as string)).toEqual({ id: "ada", email: "ada@example.com", data: { plan: "pro" } });
    expect(first?.body_truncated).toBe(false);
    expect(Math.abs(Date.parse(first?.received_at as string) - Date.now())).toBeLessThan(5 * 60_000);
    expect(JSON.parse(all[3]?.body as string)).toEqual({ type: "identify", id: "bo" });
    expect(all[10]?.body).toBe("not json");
    expect(all[8]?.body).toBe(JSON.stringify({ id: "dee", auth_token: "[redacted]" }));
    expect(JSON.stringify(all)).not.toContain(doors.authToken);
    expect(JSON.stringify(all)).not.toContain("stranger");
  });

  it("filters by door, outcome and user, moving `next` past what it left out", async () => {
    const summary = (entries: IntakeLogEntry[]) => entries.map(({ door, user_id }) => `${door} ${user_id}`);
    expect(summary((await readAll(doors, { door: "batch" })).entries)).toEqual(["batch bo", "batch bo"]);
    expect(summary((await readAll(doors, { outcome: "refused" })).entries)).toEqual([
      "users ada",
      "batch bo",
      "v1 null",
      "import null",
    ]);
    expect(summary((await readAll(doors, { user_id: "ada", outcome: "accepted" })).entries)).toEqual([
      "users ada",
      "events ada",
    ]);
    const filtered = await read(doors, { door: "import" });
    expect(filtered.body.entries.map(({ position }) => position)).toEqual(all.slice(9).map(({ position }) => position));
    expect(filtered.body.next).toBe(all[all.length - 1]?.position);
  });

  it("pages by its cursor, each entry once, and refuses a cursor it did not give this project", async () => {
    const paged: IntakeLogEntry[] = [];
    let after: string | null = null;
    for (;;) {
      const page = await read(doors, { limit: "2", ...(after === null ? {} : { after }) });
      expect(page.body.entries.length).toBeLessThanOrEqual(2);
      if (page.body.entries.length === 0) break;
      paged.push(...page.body.entries);
      after = page.body.next;
    }
    expect(paged).toEqual(all);
    expect((await read(doors, { after: all[5]?.position as string })).body.entries).toEqual(all.slice(6));

    const forged = await read(doors, { after: Buffer.from(`intake:${doors.id}:1-x`).toString("base64url") });
    expect(forged.status).toBe(400);
    expect(forged.body.errors).toEqual([{ path: "query.after", message: expect.stringMatching(/intake log/) }]);
    const other = await createTestProject(stack.db.sql, "other");
    expect((await read(other, { after: all[0]?.position as string })).status).toBe(400);
    for (const bad of [{ limit: "0" }, { limit: "1001" }, { wait: "31" }, { door: "smtp" }, { outcome: "maybe" }]) {
      expect((await read(doors, bad)).status, JSON.stringify(bad)).toBe(400);
    }
  });

  it("answers a waiting reader as soon as an entry comes", async () => {
    const { cursor } = await readAll(doors);
    const waiting = read(doors, { after: cursor as string, wait: "25" });
    await sleep(200);
    expect((await send(doors, "/users/track", { id: "late" })).status).toBe(200);
    const page = await waiting;
    expect(page.status).toBe(200);
    expect(page.body.entries.map(({ user_id }) => user_id)).toEqual(["late"]);
    // With nothing new, the wait ends empty, at the same place.
    const idle = await read(doors, { after: page.body.next, wait: "1" });
    expect(idle.body).toEqual({ entries: [], next: page.body.next });
  });

  it("notes a batch's first 50 accepted and first 50 refused operations, and every delete", async () => {
    const project = await createTestProject(stack.db.sql, "big batch");
    const batch = Array.from({ length: 200 }, (_, n) =>
      n === 150
        ? { type: "delete", id: "gone" }
        : n % 2 === 0
          ? { type: "identify", id: `b${n}` }
          : { type: "edit", id: `b${n}` },
    );
    expect((await send(project, "/batch", { batch })).status).toBe(200);
    const logged = await logOf(project, 101);
    const refused = logged.filter(({ outcome }) => outcome === "refused").map(({ user_id }) => user_id);
    const accepted = logged.filter(({ outcome }) => outcome === "accepted").map(({ user_id }) => user_id);
    expect(refused).toEqual(Array.from({ length: 50 }, (_, n) => `b${2 * n + 1}`));
    expect(accepted).toEqual([...Array.from({ length: 50 }, (_, n) => `b${2 * n}`), null]);
    expect(logged.at(-1)?.operation).toBe("delete");
  });

  it("needs intake:read, and shows a project its own requests only", async () => {
    expect((await read(doors, {}, await doors.keyWith(["changes:read", "profile:read"]))).status).toBe(403);
    expect((await read(doors, {}, await doors.keyWith(["intake:read"]))).status).toBe(200);
    const other = await createTestProject(stack.db.sql, "neighbour");
    expect((await read(other)).body.entries).toEqual([]);
    expect((await send(other, "/users/track", { id: "neighbour-user" })).status).toBe(200);
    const theirs = await logOf(other, 1);
    expect(theirs.map(({ user_id }) => user_id)).toEqual(["neighbour-user"]);
    const mine = (await readAll(doors)).entries;
    expect(mine.map(({ user_id }) => user_id)).not.toContain("neighbour-user");
  });
});

describe("the intake log's bounds", () => {
  let bounded: RunningGateway;
  const settings = { maxEntries: 10, maxAgeS: 3, bodyBytes: 256 };

  beforeAll(async () => {
    bounded = await startGateway({ ...stack.config, intakeLog: settings }, testLogger("intake_log_bounds"));
  });
  afterAll(() => bounded.stop());

  it("cuts a body to INTAKE_LOG_BODY_BYTES and says so", async () => {
    const project = await createTestProject(stack.db.sql, "cut");
    expect(
      (await send(project, "/users/track", { id: "long", data: { text: "x".repeat(1000) } }, "POST", bounded.url))
        .status,
    ).toBe(200);
    const [entry] = await logOf(project, 1);
    expect(entry?.body_truncated).toBe(true);
    expect(Buffer.byteLength(entry?.body as string)).toBeLessThanOrEqual(settings.bodyBytes);
    expect(entry?.body).toBe(`{"id":"long","data":{"text":"${"x".repeat(1000)}"}}`.slice(0, settings.bodyBytes));
  });

  it("keeps about INTAKE_LOG_MAX_ENTRIES entries of a project, for INTAKE_LOG_MAX_AGE_S at most", async () => {
    const project = await createTestProject(stack.db.sql, "bounded");
    const sent = 250;
    for (let n = 0; n < sent; n += 1) {
      expect((await send(project, "/users/track", { id: `u${n}` }, "POST", bounded.url)).status).toBe(200);
    }
    await bounded.deps.intakeLogWriter.drain();
    const redis = testRedis();
    try {
      const key = intakeLogKey(stack.config.queuePrefix, project.id);
      // Redis trims whole nodes of a stream (100 entries): about the bound, never the whole history.
      const kept = await redis.xlen(key);
      expect(kept).toBeGreaterThanOrEqual(settings.maxEntries);
      expect(kept).toBeLessThanOrEqual(settings.maxEntries + 100);
      const { entries } = await readAll(project);
      expect(entries.at(-1)?.user_id).toBe(`u${sent - 1}`);
      expect(await redis.pttl(key)).toBeLessThanOrEqual(settings.maxAgeS * 1000);
      // Past the age bound, nothing is shown, and the stream itself expires.
      await sleep(settings.maxAgeS * 1000 + 200);
      expect((await readAll(project)).entries).toEqual([]);
      await waitFor("the stream expired", async () => ((await redis.exists(key)) === 0 ? true : undefined));
    } finally {
      redis.disconnect();
    }
  });

  it("fails no request when the log cannot be written", async () => {
    const project = await createTestProject(stack.db.sql, "unwritable");
    const redis = testRedis();
    try {
      // A key of another type: every write of the project's log is refused (WRONGTYPE).
      await redis.set(intakeLogKey(stack.config.queuePrefix, project.id), "not a stream");
      expect((await send(project, "/users/track", { id: "still-accepted" })).status).toBe(200);
      expect((await send(project, "/users/track", { id: "still-accepted", data: "bad" })).status).toBe(400);
      await (await stack.gateway()).deps.intakeLogWriter.drain();
      expect((await send(project, "/users/track", { id: "still-accepted" })).status).toBe(200);
    } finally {
      redis.disconnect();
    }
  });

  it("keeps nothing when INTAKE_LOG_MAX_ENTRIES is 0", async () => {
    const off = await startGateway(
      { ...stack.config, intakeLog: { ...settings, maxEntries: 0 } },
      testLogger("intake_log_off"),
    );
    try {
      const project = await createTestProject(stack.db.sql, "off");
      expect((await send(project, "/users/track", { id: "unlogged" }, "POST", off.url)).status).toBe(200);
      await off.deps.intakeLogWriter.drain();
      expect((await read(project)).body.entries).toEqual([]);
    } finally {
      await off.stop();
    }
  });
});

describe("erasure", () => {
  it("removes every entry of an erased user, ids linked to it included, and leaves the others", async () => {
    const project = await createTestProject(stack.db.sql, "erasure");
    const secret = "eve-secret-value";
    expect((await send(project, "/users/track", { id: "eve-old", data: { secret } })).status).toBe(200);
    expect((await send(project, "/users/reidentify", { id: "eve-old", new_id: "eve" }, "PUT")).status).toBe(200);
    expect(
      (await send(project, "/users/track", { id: "eve", email: "eve@example.com", data: { secret } })).status,
    ).toBe(200);
    expect(
      (await send(project, "/events/track", { identity: { id: "eve" }, event_name: "Paid", data: { secret } })).status,
    ).toBe(200);
    expect((await send(project, "/batch", { batch: [{ type: "tags", id: "eve", add: [secret] }] })).status).toBe(200);
    expect((await sendSpec(project, "/identify", { userId: "eve", traits: { secret } })).status).toBe(200);
    expect((await send(project, "/users/track", { id: "kept", data: { plan: "kept" } })).status).toBe(200);
    await logOf(project, 7);
    await waitFor("eve's profile", async () => {
      const response = await fetch(`${base}/api/v2/users/eve`, { headers: { authorization: project.apiKey } });
      return response.status === 200 ? true : undefined;
    });

    expect((await send(project, "/users/delete", { id: "eve" })).status).toBe(200);
    const left = await waitFor("eve's entries erased", async () => {
      const { entries } = await readAll(project);
      return entries.some(({ body }) => body.includes(secret)) ? undefined : entries;
    });
    expect(left.map(shown)).toEqual([
      { door: "users", operation: "identify", outcome: "accepted", status: 200, reason: null, user_id: "kept" },
      // The delete's entry names no one: what it names is being erased.
      { door: "users", operation: "delete", outcome: "accepted", status: 200, reason: null, user_id: null },
    ]);
    expect(left[1]?.body).toBe("");
    expect(JSON.stringify(left)).not.toMatch(/eve/);
  });

  it("leaves out of a write the entries of a user that a delete in the same write erases", async () => {
    // The worker may apply a delete before the entries written with it reach Redis: they never do.
    const redis = testRedis();
    const log = { redis, prefix: stack.config.queuePrefix, maxEntries: 100, maxAgeMs: 60_000 };
    const failures = { writeFailed: (error: unknown) => expect.unreachable(String(error)), dropped: () => undefined };
    const writer = new IntakeLogWriter(log, () => undefined, failures, { flushMs: 60_000, maxPending: 100 });
    const doors = { intakeLogWriter: writer, intakeLogBodyBytes: 2048 };
    const project = await createTestProject(stack.db.sql, "same write");
    const seen = (body: object) => ({
      projectId: project.id,
      receivedAt: Date.now(),
      text: JSON.stringify(body),
      body,
    });
    const reply = { status: 200, message: "Success." };
    try {
      singleDoorLog(doors, "users", "identify").accepted(seen({ id: "fast", data: { secret: "s" } }), reply);
      singleDoorLog(doors, "users", "identify").accepted(seen({ id: "other" }), reply);
      singleDoorLog(doors, "users", "delete").accepted(seen({ id: "fast" }), reply);
      singleDoorLog(doors, "users", "identify").accepted(seen({ id: "fast", data: { plan: "anew" } }), reply);
      await writer.drain();
      const entries = (await readAll(project)).entries;
      expect(entries.map(({ operation, user_id }) => `${operation} ${user_id}`)).toEqual([
        "identify other",
        "delete null",
        // Received after the delete: the profile an identify starts anew.
        "identify fast",
      ]);
    } finally {
      redis.disconnect();
    }
  });
});
