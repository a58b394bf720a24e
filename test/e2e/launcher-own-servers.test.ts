/**
 * `npm start` where nothing answers at the default DATABASE_URL and REDIS_URL (neither is set;
 * CM_POSTGRES_PORT and CM_REDIS_PORT move the defaults to ports where nothing runs, as the
 * shared test Postgres and Redis answer at the usual ones): it runs an embedded Postgres 17 and a
 * durable redis-server of its own, keeps their data for the next start, and stops them on Ctrl-C.
 */
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { connect } from "@cm/db";
import { redisDurabilityProblems } from "@cm/queue";
import { freePort } from "../support/private-redis";
import { runCtl, startChild, type ChildService } from "../support/processes";
import { waitFor } from "../support/wait";

const dataDir = mkdtempSync(join(tmpdir(), "cm-launcher-own-"));
// Run as root, the embedded Postgres runs as the "postgres" user, who must reach its data in here.
chmodSync(dataDir, 0o755);
const running: ChildService[] = [];

/** Starts the launcher with neither URL set, and waits for everything it prints. */
async function launch(ports: { postgres: number; redis: number }): Promise<{ launcher: ChildService; output: string }> {
  const launcher = startChild(
    "apps/ctl/dist/launcher.js",
    {
      PATH: process.env.PATH,
      CM_DATA_DIR: dataDir,
      CM_POSTGRES_PORT: String(ports.postgres),
      CM_REDIS_PORT: String(ports.redis),
      PORT: String(await freePort()),
      METRICS_PORT: "0",
      LOG_LEVEL: "warn",
    },
    [],
    false,
  );
  running.push(launcher);
  const output = await waitFor(
    "the launcher's try-out lines",
    async () => {
      if (launcher.child.exitCode !== null) throw new Error(`the launcher exited: ${launcher.output()}`);
      return /Try it/.test(launcher.output()) ? launcher.output() : undefined;
    },
    90_000,
  );
  return { launcher, output };
}

/** What the launcher printed: the API's URL, the demo's credentials and the line to export them. */
function printed(output: string) {
  return {
    api: /The service is running at (\S+)/.exec(output)?.[1],
    authToken: /auth_token[^:]*: (cmt_\S+)/.exec(output)?.[1],
    apiKey: /api_key[^:]*: (cmk_\S+)/.exec(output)?.[1],
    exported: /^ {2}export (.*)$/m.exec(output)?.[1],
  };
}

async function stopped(launcher: ChildService): Promise<number | null> {
  launcher.child.kill("SIGINT");
  return launcher.exited;
}

/** Whether the process runs (a zombie, exited and not yet reaped, does not). */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/** The processes whose command line holds `text`. */
function processesWith(text: string): number[] {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").includes(text);
      } catch {
        return false;
      }
    });
}

function postmasterPid(): number {
  return Number(readFileSync(join(dataDir, "postgres", "postmaster.pid"), "utf8").split("\n")[0]);
}

afterAll(async () => {
  for (const launcher of running) if (launcher.child.exitCode === null) await stopped(launcher);
  rmSync(dataDir, { recursive: true, force: true });
});

describe("npm start with nothing at the default DATABASE_URL and REDIS_URL", () => {
  it(
    "runs its own Postgres 17 and Redis, serves on them, keeps their data and stops them on Ctrl-C",
    { timeout: 240_000 },
    async () => {
      const ports = { postgres: await freePort(), redis: await freePort() };
      const postgresUrl = `postgres://postgres@127.0.0.1:${ports.postgres}/postgres`;
      const redisUrl = `redis://127.0.0.1:${ports.redis}`;
      const first = await launch(ports);
      expect(first.output).toContain(`started an embedded Postgres 17 at ${postgresUrl}, as nothing answered there`);
      expect(first.output).toContain(
        `started redis-server with an append-only file at ${redisUrl}, as nothing answered there`,
      );
      const { api, authToken, exported } = printed(first.output);
      // The line to export names these servers: a ctl run in that shell reaches them, not the default ports.
      expect(exported).toContain(`DATABASE_URL=${postgresUrl}`);
      expect(exported).toContain(`REDIS_URL=${redisUrl}`);
      const shell = Object.fromEntries((exported ?? "").split(" ").map((pair) => pair.split(/=(.*)/s).slice(0, 2)));
      const demoProject = /Demo project (\d+)/.exec(first.output)?.[1] ?? "";
      const keys = await runCtl({ PATH: process.env.PATH, ...shell }, ["key", "list", "--project", demoProject]);
      expect(keys.code, keys.stderr).toBe(0);
      expect((JSON.parse(keys.stdout) as { credentials: unknown[] }).credentials).not.toEqual([]);

      const tracked = await fetch(`${api}/users/track?auth_token=${authToken}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ id: "own-servers-user", data: { tried: true } }),
      });
      expect(await tracked.json()).toEqual({ status: 200, message: "Success." });
      const sql = connect(postgresUrl, { max: 1 });
      const redis = new Redis(redisUrl);
      try {
        const [{ version }] = await sql<{ version: string }[]>`SELECT current_setting('server_version') AS version`;
        expect(version).toMatch(/^17\./);
        const applied = await waitFor("the worker to apply it in the embedded Postgres", async () => {
          const rows = await sql<{ tried: boolean }[]>`
          SELECT (data -> 'tried' ->> 'v')::boolean AS tried FROM profiles WHERE external_id = 'own-servers-user'`;
          return rows[0]?.tried;
        });
        expect(applied).toBe(true);
        expect(await redisDurabilityProblems(redis)).toEqual([]);
      } finally {
        redis.disconnect();
        await sql.end();
      }

      const postgresPid = postmasterPid();
      const redisPids = processesWith(`redis-server 127.0.0.1:${ports.redis}`);
      expect(redisPids).toHaveLength(1);
      expect(await stopped(first.launcher)).toBe(0);
      expect(alive(postgresPid)).toBe(false);
      expect(existsSync(join(dataDir, "postgres", "postmaster.pid"))).toBe(false);
      expect(redisPids.filter(alive)).toEqual([]);

      // The next start runs on the same data: initialised once, the same credentials, the profile kept.
      const second = await launch(ports);
      try {
        expect(second.output).toContain(`started an embedded Postgres 17 at ${postgresUrl}`);
        const again = printed(second.output);
        expect(again.exported).toBe(exported);
        const log = readFileSync(join(dataDir, "services.log"), "utf8");
        expect(log.match(/The files belonging to this database system/g)).toHaveLength(1);
        const profile = await fetch(`${again.api}/users/own-servers-user`, {
          headers: { authorization: `Bearer ${again.apiKey}` },
        });
        expect(await profile.json()).toMatchObject({ id: "own-servers-user", data: { tried: true } });
      } finally {
        expect(await stopped(second.launcher)).toBe(0);
      }
      expect(processesWith(`redis-server 127.0.0.1:${ports.redis}`).filter(alive)).toEqual([]);
      expect(existsSync(join(dataDir, "postgres", "postmaster.pid"))).toBe(false);
    },
  );
});
