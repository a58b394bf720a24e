import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findCredential } from "@cm/db";
import { parseToken, PERMISSIONS } from "@cm/domain";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { childEnv, testConfig } from "../support/env";
import { runCtl } from "../support/processes";
import { storedKeyOf } from "../support/profile-operations";

let db: TestDatabase;
let env: NodeJS.ProcessEnv;

async function ctlJson(args: string[]) {
  const result = await runCtl(env, args);
  expect(result.stderr, args.join(" ")).toBe("");
  expect(result.code, args.join(" ")).toBe(0);
  return JSON.parse(result.stdout);
}

beforeAll(async () => {
  db = await createTestDatabase("ctl");
  env = childEnv(testConfig(db.url, "unused"));
});
afterAll(() => db.drop());

describe("ctl", () => {
  it("migrate applies nothing on a migrated database, and everything on an empty one", async () => {
    expect(await ctlJson(["migrate"])).toEqual({ migrated: [] });
    await db.sql`CREATE SCHEMA fresh`;
    const fresh = new URL(db.url);
    fresh.searchParams.set("options", "-c search_path=fresh");
    const freshEnv = { ...env, DATABASE_URL: fresh.toString() };
    const first = JSON.parse((await runCtl(freshEnv, ["migrate"])).stdout);
    expect(first.migrated.length).toBeGreaterThanOrEqual(3);
    expect(first.migrated[0]).toBe("001_projects_and_credentials.sql");
    expect(JSON.parse((await runCtl(freshEnv, ["migrate"])).stdout)).toEqual({ migrated: [] });
  });

  it("project create prints the project, an auth token and an API key, and stores only hashes", async () => {
    const created = await ctlJson(["project", "create", "--name", "Acme"]);
    expect(created).toEqual({
      project: { id: expect.any(Number), name: "Acme" },
      auth_token: expect.stringMatching(/^cmt_/),
      api_key: expect.stringMatching(/^cmk_/),
    });
    const stored =
      await db.sql`SELECT secret_hash, permissions FROM credentials WHERE project_id = ${created.project.id} ORDER BY id`;
    expect(stored.map((row) => row.permissions)).toEqual([[], [...PERMISSIONS]]);
    const everything = JSON.stringify(await db.sql`SELECT * FROM credentials`);
    for (const token of [created.auth_token, created.api_key]) {
      const secret = parseToken(token)?.secret as string;
      expect(secret).toHaveLength(43);
      expect(everything).not.toContain(secret);
      expect(everything).not.toContain(Buffer.from(secret).toString("hex"));
    }
  });

  it("key create gives a key with exactly the permissions named, or none", async () => {
    const { project } = await ctlJson(["project", "create", "--name", "Keys"]);
    expect(
      await ctlJson(["key", "create", "--project", String(project.id), "--permissions", "campaign:read,profile:read"]),
    ).toEqual({
      api_key: expect.stringMatching(/^cmk_/),
      permissions: ["campaign:read", "profile:read"],
    });
    expect(await ctlJson(["key", "create", "--project", String(project.id), "--permissions", ""])).toMatchObject({
      permissions: [],
    });
    expect(
      await ctlJson(["key", "create", "--project", String(project.id), "--permissions", "changes:read"]),
    ).toMatchObject({ permissions: ["changes:read"] });
  });

  it("key list, rotate and revoke: listed without secrets, the old key working through its grace, a revoked one at once stopped", async () => {
    const { project, api_key: first } = await ctlJson(["project", "create", "--name", "Rotation"]);
    const id = parseToken(first)?.id as string;
    const rotated = await ctlJson(["key", "rotate", "--id", id, "--grace", "3600"]);
    expect(rotated).toEqual({
      api_key: expect.stringMatching(/^cmk_/),
      replaces: id,
      replaced_works_until: expect.any(String),
    });
    const untilMs = Date.parse(rotated.replaced_works_until) - Date.now();
    expect(untilMs).toBeGreaterThan(3_500_000);
    expect(untilMs).toBeLessThanOrEqual(3_600_000);
    // Both work while integrations switch; the new one has the old one's permissions.
    expect(await findCredential(db.sql, first)).toMatchObject({ projectId: project.id });
    expect(await findCredential(db.sql, rotated.api_key)).toMatchObject({
      projectId: project.id,
      permissions: [...PERMISSIONS],
    });

    const listed = await ctlJson(["key", "list", "--project", String(project.id)]);
    expect(listed.credentials.map((c: { id: string; working: boolean }) => [c.id, c.working])).toEqual([
      [id, true],
      [parseToken(rotated.api_key)?.id, true],
    ]);
    expect(JSON.stringify(listed)).not.toContain(parseToken(first)?.secret);

    expect(await ctlJson(["key", "revoke", "--id", id])).toEqual({ revoked: id });
    expect(await findCredential(db.sql, first)).toBeNull();
    const again = await runCtl(env, ["key", "revoke", "--id", id]);
    expect([again.code, again.stderr]).toEqual([1, expect.stringMatching(/no working api_key/)]);

    // A grace of 0 stops the old one at once; tokens rotate the same way, and keys are not tokens.
    const { auth_token: token } = await ctlJson(["token", "create", "--project", String(project.id)]);
    const tokenId = parseToken(token)?.id as string;
    const wrongKind = await runCtl(env, ["key", "rotate", "--id", tokenId]);
    expect(wrongKind.code).toBe(1);
    const newToken = await ctlJson(["token", "rotate", "--id", tokenId, "--grace", "0"]);
    expect(await findCredential(db.sql, token)).toBeNull();
    expect(await findCredential(db.sql, newToken.auth_token)).toMatchObject({ kind: "auth_token" });
    const tokens = await ctlJson(["token", "list", "--project", String(project.id)]);
    expect(tokens.credentials.filter((c: { working: boolean }) => c.working)).toHaveLength(2);
  });

  it("--help and <command> --help print the usage, without a database", async () => {
    const noDatabase = { ...env, DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" };
    const all = await runCtl(noDatabase, ["--help"]);
    expect([all.code, all.stderr]).toEqual([0, ""]);
    expect(all.stdout).toMatch(/key rotate --id ID/);
    expect(all.stdout).toMatch(/replay \[--project ID\]/);
    const one = await runCtl(noDatabase, ["key", "rotate", "--help"]);
    expect([one.code, one.stdout.trim().split("\n")]).toEqual([
      0,
      [
        "usage: ctl key rotate --id ID [--grace SECONDS]",
        expect.stringMatching(/^ {2}--id ID +the API key's id/),
        expect.stringMatching(/^ {2}--grace SECONDS +.*default 86400/),
      ],
    ]);
    const group = await runCtl(noDatabase, ["key", "--help"]);
    expect(group.stdout.trim().split("\n")).toEqual([
      "usage: ctl",
      ...["create", "list", "revoke", "rotate"].map((verb) => expect.stringMatching(new RegExp(`^ {2}key ${verb}`))),
    ]);
  });

  it("<command> --help lists each option and the values it takes", async () => {
    const noDatabase = { ...env, DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" };
    const help = async (...words: string[]) => (await runCtl(noDatabase, [...words, "--help"])).stdout;
    expect(await help("key", "create")).toMatch(
      /--permissions p1,p2 +any of campaign:read, campaign:write, profile:read, changes:read, intake:read/,
    );
    expect(await help("topic", "create")).toMatch(/--default-status STATUS +subscribed or unsubscribed/);
    expect(await help("journey", "status")).toMatch(
      /--status STATUS +one of draft, active, paused, archived, cancelled/,
    );
    expect(await help("webhook", "create")).toMatch(/--types T1,T2 .*profile\.created, .*user\.erased/);
    expect(await help("replay")).toMatch(/--queue identify\|events/);
    expect(await help("import")).toMatch(/--format ndjson\|csv\|vero\|segment\|customerio/);
  });

  it("topic create prints the Topic", async () => {
    const { project } = await ctlJson(["project", "create", "--name", "Topics"]);
    const topic = await ctlJson([
      "topic",
      "create",
      "--project",
      String(project.id),
      "--name",
      "  Weekly digest ",
      "--description",
      "Every Monday",
      "--default-status",
      "unsubscribed",
    ]);
    expect(topic).toEqual({
      id: expect.any(Number),
      name: "Weekly digest",
      description: "Every Monday",
      default_status: "unsubscribed",
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(await ctlJson(["topic", "create", "--project", String(project.id), "--name", "Other"])).toMatchObject({
      default_status: "subscribed",
    });
  });

  it.each([
    [["project", "create"], /--name is required/],
    [["key", "create", "--project", "1", "--permissions", "campaign:read,root"], /unknown permission root/],
    [["key", "create", "--project", "999999", "--permissions", ""], /project 999999 does not exist/],
    [["topic", "create", "--project", "abc", "--name", "x"], /--project must be a positive integer/],
    [["topic", "create", "--project", "1", "--name", "x", "--default-status", "maybe"], /--default-status/],
    [["frobnicate"], /unknown command/],
    [["project", "create", "--name", "x", "--colour", "red"], /Unknown option/],
  ])("%j fails with a clear message and a non-zero exit", async (args, message) => {
    const result = await runCtl(env, args);
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(message);
  });

  it("a duplicate topic name, ignoring case, is refused", async () => {
    const { project } = await ctlJson(["project", "create", "--name", "Dupes"]);
    await ctlJson(["topic", "create", "--project", String(project.id), "--name", "News"]);
    const result = await runCtl(env, ["topic", "create", "--project", String(project.id), "--name", "NEWS"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/already has a topic named/);
  });

  it("events delete removes a user's events in a time range, linked ids' included, and nothing else", async () => {
    const { project } = await ctlJson(["project", "create", "--name", "Events"]);
    const at = (day: number) => new Date(Date.UTC(2026, 0, day)).toISOString();
    const key = (id: string) => storedKeyOf(db.sql, project.id, id);
    await db.sql`
      INSERT INTO profile_links (project_id, from_key, to_key, t) VALUES (${project.id}, ${await key("old")}, ${await key("u")}, 1)`;
    for (const [user, day] of [
      ["u", 1],
      ["u", 2],
      ["old", 2],
      ["u", 3],
      ["other", 2],
    ] as const) {
      await db.sql`
        INSERT INTO events (project_id, user_key, id, name, name_key, created_at, received_at)
        VALUES (${project.id}, ${await key(user)}, gen_random_uuid(), 'e', 'e', ${at(day)}, ${at(day)})`;
    }
    const id = String(project.id);
    expect(await ctlJson(["events", "delete", "--project", id, "--user", "u", "--from", at(2), "--to", at(3)])).toEqual(
      {
        deleted: 2,
      },
    );
    const left = await db.sql`SELECT user_key, created_at FROM events WHERE project_id = ${project.id}`;
    const users = new Map([
      [await key("u"), "u"],
      [await key("other"), "other"],
    ]);
    expect(left.map((row) => [users.get(row.user_key), row.created_at.toISOString()]).sort()).toEqual([
      ["other", at(2)],
      ["u", at(1)],
      ["u", at(3)],
    ]);
    expect(await ctlJson(["events", "delete", "--project", id, "--user", "u"])).toEqual({ deleted: 2 });
    const refused = await runCtl(env, ["events", "delete", "--project", id, "--user", "u", "--from", "soon"]);
    expect([refused.code, refused.stderr]).toEqual([2, expect.stringMatching(/--from/)]);
  });

  it("reports an unreachable database clearly", async () => {
    const result = await runCtl({ ...env, DATABASE_URL: "postgres://postgres@127.0.0.1:1/none" }, ["migrate"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/ECONNREFUSED|connect/);
  });
});
