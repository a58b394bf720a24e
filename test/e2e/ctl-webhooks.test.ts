import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { recordWebhookFailure } from "@cm/db";
import { openSecret } from "@cm/domain";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { hostAddresses } from "../support/own-addresses-only";
import { childEnv, testConfig } from "../support/env";
import { runCtl } from "../support/processes";
import { createTestProject } from "../support/project";

let db: TestDatabase;
let env: NodeJS.ProcessEnv;
let projectId: string;
const key = randomBytes(32);

async function ctlJson(args: string[]) {
  const result = await runCtl(env, args);
  expect(result.stderr, args.join(" ")).toBe("");
  expect(result.code, args.join(" ")).toBe(0);
  return JSON.parse(result.stdout);
}

beforeAll(async () => {
  db = await createTestDatabase("ctl_webhooks");
  env = childEnv(testConfig(db.url, "unused"), { WEBHOOK_SECRET_KEY: key.toString("base64") });
  projectId = String((await createTestProject(db.sql)).id);
});
afterAll(() => db.drop());

describe("ctl webhook", () => {
  it("create prints the endpoint and its secret once; only the sealed secret is stored, and list never shows it", async () => {
    const created = await ctlJson([
      "webhook",
      "create",
      "--project",
      projectId,
      "--url",
      "https://hooks.example.com/in",
      "--types",
      "unsubscribed,user.erased",
    ]);
    expect(created).toMatchObject({
      webhook: {
        id: expect.any(String),
        url: "https://hooks.example.com/in",
        types: ["unsubscribed", "user.erased"],
        state: "active",
      },
      secret: expect.stringMatching(/^whsec_/),
    });
    const [row] = await db.sql`SELECT secret_sealed FROM webhook_endpoints WHERE id = ${created.webhook.id}`;
    expect(openSecret(key, row!.secret_sealed)).toBe(created.secret);
    expect(JSON.stringify(await db.sql`SELECT * FROM webhook_endpoints`)).not.toContain(created.secret.slice(6));
    const listed = await ctlJson(["webhook", "list", "--project", projectId]);
    expect(listed.webhooks.map((webhook: { id: string }) => webhook.id)).toContain(created.webhook.id);
    expect(JSON.stringify(listed)).not.toContain(created.secret.slice(6));
  });

  it("refuses a URL that is not http(s), a project that does not exist, and any secret without WEBHOOK_SECRET_KEY", async () => {
    const bad = await runCtl(env, ["webhook", "create", "--project", projectId, "--url", "ftp://example.com/"]);
    expect(bad).toMatchObject({ code: 2, stderr: "error: url must be an http or https URL\n" });
    const typo = ["--url", "https://example.com/", "--types", "unsubscribed,unsubscribe"];
    const unknown = await runCtl(env, ["webhook", "create", "--project", projectId, ...typo]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^error: unknown change type "unsubscribe" \(known: profile\.created, /);
    const none = await runCtl(env, ["webhook", "create", "--project", "999999", "--url", "https://example.com/"]);
    expect(none).toMatchObject({ code: 1, stderr: "error: project 999999 does not exist\n" });
    const keyless = { ...env, WEBHOOK_SECRET_KEY: "" };
    const unkeyed = await runCtl(keyless, ["webhook", "create", "--project", projectId, "--url", "https://e.com/"]);
    expect(unkeyed.code).toBe(1);
    expect(unkeyed.stderr).toMatch(/^error: WEBHOOK_SECRET_KEY \(or WEBHOOK_SECRET_KEY_FILE\) is not set/);
  });

  it("refuses a URL the worker would refuse, saying why and the setting that allows it, and stores nothing", async () => {
    const allows =
      "WEBHOOK_ALLOW_PRIVATE_NETWORKS=true allows loopback, private-use, shared and unique-local networks and the host's own addresses";
    const own = hostAddresses().find(({ family }) => family === "IPv4")?.address;
    const refusals: [url: string, stderr: string][] = [
      ["http://10.0.0.1/in", `10.0.0.1 is in 10.0.0.0/8 (private-use); ${allows}`],
      ["http://0x7f.1:8080/in", `127.0.0.1 is in 127.0.0.0/8 (loopback); ${allows}`],
      ["http://localhost:8080/in", "localhost resolves only to addresses webhooks do not reach: "],
      ["http://198.51.100.7/in", "198.51.100.7 is in 198.51.100.0/24 (documentation), which no setting allows"],
      ["http://[2001:db8::1]/in", "2001:db8::1 is in 2001:db8::/32 (documentation), which no setting allows"],
      [
        "http://[::ffff:169.254.169.254]/latest",
        "::ffff:a9fe:a9fe is in 169.254.0.0/16 (link-local), within ::ffff:0:0/96 (IPv4-mapped), which no setting allows",
      ],
      // An address of its own (192.0.2.2 here: "is an address of this host"), or in a private range.
      ...(own === undefined ? [] : [[`http://${own}:8080/in`, `${own} is `] as [string, string]]),
    ];
    const [{ count: before }] = await db.sql<{ count: number }[]>`SELECT count(*)::int AS count FROM webhook_endpoints`;
    for (const [url, reason] of refusals) {
      const refused = await runCtl(env, ["webhook", "create", "--project", projectId, "--url", url]);
      expect(refused.code, url).toBe(2);
      expect(refused.stdout, url).toBe("");
      expect(refused.stderr, url).toContain(`error: url refused: ${reason}`);
      if (!reason.endsWith("which no setting allows")) expect(refused.stderr, url).toContain(allows);
    }
    const [{ count: after }] = await db.sql<{ count: number }[]>`SELECT count(*)::int AS count FROM webhook_endpoints`;
    expect(after).toBe(before);
    const privateEnv = { ...env, WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true" };
    const allowed = await runCtl(privateEnv, [
      "webhook",
      "create",
      "--project",
      projectId,
      "--url",
      "http://10.0.0.1/",
    ]);
    expect(allowed.code, allowed.stderr).toBe(0);
    const metadata = ["webhook", "create", "--project", projectId, "--url", "http://169.254.169.254/"];
    expect(await runCtl(privateEnv, metadata)).toMatchObject({
      code: 2,
      stderr: "error: url refused: 169.254.169.254 is in 169.254.0.0/16 (link-local), which no setting allows\n",
    });
  });

  it("rotate-secret prints a new secret; the old one keeps signing through the grace period", async () => {
    const created = await ctlJson(["webhook", "create", "--project", projectId, "--url", "https://e.com/r"]);
    const rotated = await ctlJson(["webhook", "rotate-secret", "--id", created.webhook.id, "--grace", "3600"]);
    expect(rotated).toEqual({
      id: created.webhook.id,
      secret: expect.stringMatching(/^whsec_/),
      previous_secret_signs_until: expect.any(String),
    });
    expect(rotated.secret).not.toBe(created.secret);
    expect(Date.parse(rotated.previous_secret_signs_until) - Date.now()).toBeGreaterThan(3_500_000);
    const [row] = await db.sql`
      SELECT secret_sealed, previous_secret_sealed FROM webhook_endpoints WHERE id = ${created.webhook.id}`;
    expect(openSecret(key, row!.secret_sealed)).toBe(rotated.secret);
    expect(openSecret(key, row!.previous_secret_sealed)).toBe(created.secret);
  });

  it("revoke stops an endpoint once; replay resumes only a parked one", async () => {
    const created = await ctlJson(["webhook", "create", "--project", projectId, "--url", "https://e.com/p"]);
    const id = created.webhook.id;
    const notParked = await runCtl(env, ["webhook", "replay", "--id", id]);
    expect(notParked).toMatchObject({ code: 1, stderr: `error: no parked webhook endpoint ${id}\n` });
    const failure = { error: "answered 500", retryBaseDelayMs: 1000, retryMaxDelayMs: 1000, parkAfterS: 0 };
    expect(await recordWebhookFailure(db.sql, id, created.webhook.cursor, failure)).toEqual({ state: "parked" });
    const parked = (await ctlJson(["webhook", "list", "--project", projectId])).webhooks.find(
      (webhook: { id: string }) => webhook.id === id,
    );
    expect(parked).toMatchObject({ state: "parked", failed_tries: 1, last_error: "answered 500" });
    expect(await ctlJson(["webhook", "replay", "--id", id])).toEqual({ replayed: id });
    const replayed = (await ctlJson(["webhook", "list", "--project", projectId])).webhooks.find(
      (webhook: { id: string }) => webhook.id === id,
    );
    expect(replayed).toMatchObject({ state: "active", failed_tries: 0, failing_since: null });
    expect(await ctlJson(["webhook", "revoke", "--id", id])).toEqual({ revoked: id });
    const again = await runCtl(env, ["webhook", "revoke", "--id", id]);
    expect(again).toMatchObject({ code: 1, stderr: `error: no webhook endpoint ${id} not revoked already\n` });
    const rotate = await runCtl(env, ["webhook", "rotate-secret", "--id", id]);
    expect(rotate.code).toBe(1);
  });
});
