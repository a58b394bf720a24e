import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { openSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { loadConfig } from "@cm/config";
import { connect, migrate } from "@cm/db";
import { demoCommand } from "./commands/demo";
import { LauncherFolder } from "./launcher-state";
import { startLocalPostgres } from "./local-postgres";
import { startLocalRedis } from "./local-redis";
import { answers, freePortOr, type LocalServer } from "./local-server";

const ROOT = join(__dirname, "..", "..", "..");
const READY_TIMEOUT_MS = 30_000;

/**
 * The services' log lines go to a file, so that what the launcher prints stays readable. The IPC
 * channel is how a service learns that the launcher is gone, however it died (libs/config stopOnSignals).
 */
function startProcess(name: string, script: string, log: number): ChildProcess {
  const child = spawn(process.execPath, [join(ROOT, script)], { stdio: ["ignore", log, log, "ipc"], env: process.env });
  child.on("exit", (code, signal) => {
    if (!stopping) {
      console.error(`${name} exited unexpectedly (${signal ?? code}); stopping`);
      void stop(1);
    }
  });
  return child;
}

let stopping = false;
const children: ChildProcess[] = [];
/** Stops the servers the launcher started itself, which the children use: they stop after the children. */
const ownServers: (() => Promise<void>)[] = [];

async function stop(exitCode: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  const exits = children
    .filter((child) => child.exitCode === null && child.signalCode === null)
    .map((child) => new Promise((resolve) => child.once("exit", resolve)));
  for (const child of children) child.kill("SIGTERM");
  await Promise.all(exits);
  for (const stopServer of ownServers.reverse()) await stopServer();
  process.exit(exitCode);
}

async function waitUntilReady(url: string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const response = await fetch(`${url}/readyz`).catch(() => null);
    if (response?.ok) return;
    await sleep(200);
  }
  throw new Error(`gateway not ready at ${url} after ${READY_TIMEOUT_MS / 1000}s`);
}

/** Where the children look for a server when its URL is not set, and what the launcher runs when none answers there. */
interface DefaultServer {
  variable: "DATABASE_URL" | "REDIS_URL";
  defaultUrl: string;
  /** Moves the default to another port, to try the service beside another Postgres or Redis. */
  portVariable: string;
  what: string;
  dataDir: string;
  start(port: number): Promise<LocalServer>;
}

/**
 * With the URL unset, the default, unless nothing answers there: then the launcher's own server,
 * on that port if free. Returns the URL chosen when it is not the default, which a later
 * `npm run ctl` in the user's shell must be given to reach the same server.
 */
async function defaultOrLocalServer({
  variable,
  defaultUrl,
  portVariable,
  what,
  dataDir,
  start,
}: DefaultServer): Promise<string | undefined> {
  if (process.env[variable] !== undefined) return undefined;
  const wanted = new URL(defaultUrl);
  const movedTo = process.env[portVariable];
  if (movedTo !== undefined) {
    wanted.port = movedTo;
    // The URL keeps its port when given anything else.
    if (wanted.port !== movedTo) throw new Error(`${portVariable} is not a port number: ${movedTo}`);
  }
  const notDefault = (url: string) => (url === new URL(defaultUrl).toString() ? undefined : url);
  if (await answers(wanted.hostname, Number(wanted.port))) {
    process.env[variable] = wanted.toString();
    return notDefault(wanted.toString());
  }
  const server = await start(await freePortOr(Number(wanted.port))).catch((error: unknown) => {
    throw new Error(`nothing answers at ${wanted}, and ${error instanceof Error ? error.message : String(error)}`);
  });
  ownServers.push(server.stop);
  process.env[variable] = server.url;
  const where = server.url === wanted.toString() ? "there" : `at ${wanted}`;
  console.log(`started ${what} at ${server.url}, as nothing answered ${where} (its data: ${dataDir})`);
  return notDefault(server.url);
}

/** `npm start`: migrations, one gateway, one worker and the demo project, for a local try-out. */
async function main(): Promise<void> {
  // A local try-out runs on a development Redis, usually without persistence: say so, not stop.
  process.env.REDIS_DURABILITY ??= "warn";
  // A try-out is where an integration is set up: its requests are shown in the intake log.
  process.env.INTAKE_LOG_MAX_ENTRIES ??= "10000";
  const folder = new LauncherFolder(process.env.CM_DATA_DIR ?? join(ROOT, ".data"));
  // The servers started here run out of the terminal's process group: closing it must stop them too.
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.once(signal, () => void stop(0));
  // Webhooks' signing secrets are sealed under a key: a try-out without one gets its own, kept here.
  const webhookKeyGiven = Boolean(process.env.WEBHOOK_SECRET_KEY || process.env.WEBHOOK_SECRET_KEY_FILE);
  if (!webhookKeyGiven) process.env.WEBHOOK_SECRET_KEY_FILE = folder.webhookSecretKeyFile();
  const defaults = loadConfig({});
  const postgresDir = join(folder.path, "postgres");
  const movedPostgres = await defaultOrLocalServer({
    variable: "DATABASE_URL",
    defaultUrl: defaults.databaseUrl,
    portVariable: "CM_POSTGRES_PORT",
    what: "an embedded Postgres 17",
    dataDir: postgresDir,
    start: (port) => startLocalPostgres(postgresDir, port, folder.logFile),
  });
  const redisDir = join(folder.path, "redis");
  const movedRedis = await defaultOrLocalServer({
    variable: "REDIS_URL",
    defaultUrl: defaults.redisUrl,
    portVariable: "CM_REDIS_PORT",
    what: "redis-server with an append-only file",
    dataDir: redisDir,
    start: (port) => startLocalRedis(redisDir, port, folder.logFile),
  });
  const databaseUrl = loadConfig().databaseUrl;
  const last = folder.lastStart(databaseUrl);
  // Without ADMIN_TOKEN the queue dashboard refuses everyone; the gateway inherits this environment.
  const adminTokenGiven = Boolean(process.env.ADMIN_TOKEN);
  const adminTokenValue = process.env.ADMIN_TOKEN || last?.admin_token || randomBytes(24).toString("hex");
  process.env.ADMIN_TOKEN = adminTokenValue;
  const config = loadConfig();
  // Before anything is written: the readiness of whatever answers there would pass for the gateway's.
  if (await answers("127.0.0.1", config.port)) {
    throw new Error(`port ${config.port} is in use (another npm start?): stop what listens there, or set PORT`);
  }
  const sql = connect(config.databaseUrl, { max: 1, applicationName: "cm-launcher" });
  try {
    const migrated = await migrate(sql);
    console.log(`migrations applied: ${migrated.length === 0 ? "none needed" : migrated.join(", ")}`);
  } catch (error) {
    await sql.end();
    throw error;
  }

  const log = openSync(folder.logFile, "a");
  children.push(startProcess("gateway", "apps/gateway/dist/main.js", log));
  children.push(startProcess("worker", "apps/worker/dist/main.js", log));

  const url = `http://127.0.0.1:${config.port}`;
  await waitUntilReady(url);
  const demo = await demoCommand(sql, last);
  await sql.end();
  // A token set in the environment is the operator's to keep, not written down here.
  const keptAdminToken = adminTokenGiven ? (last?.admin_token ?? "") : adminTokenValue;
  folder.keepStart(databaseUrl, { auth_token: demo.auth_token, api_key: demo.api_key, admin_token: keptAdminToken });

  const topics = demo.topics.map((topic) => `${topic.id} "${topic.name}"`).join(", ");
  const journeys = demo.journeys.map((journey) => `${journey.id} "${journey.name}" (${journey.status})`).join(", ");
  const adminToken = adminTokenGiven ? "the one set in the environment (not shown)" : adminTokenValue;
  const exported = [`AUTH_TOKEN=${demo.auth_token}`, `API_KEY=${demo.api_key}`];
  // So that `npm run ctl -- …` in that shell goes to these servers, not to the default ports.
  if (movedPostgres !== undefined) exported.push(`DATABASE_URL=${movedPostgres}`);
  if (movedRedis !== undefined) exported.push(`REDIS_URL=${movedRedis}`);
  // For `npm run ctl -- webhook …` in that shell: the file's name, not the key.
  if (!webhookKeyGiven) exported.push(`WEBHOOK_SECRET_KEY_FILE=${process.env.WEBHOOK_SECRET_KEY_FILE}`);
  if (!adminTokenGiven) exported.push(`ADMIN_TOKEN=${adminTokenValue}`);
  console.log(`
The service is running at ${url}/api/v2   (Ctrl-C stops it; its logs: ${folder.logFile})

  export ${exported.join(" ")}

Demo project ${demo.project.id} "${demo.project.name}"
  auth_token (identify): ${demo.auth_token}
  api_key (all permissions): ${demo.api_key}
  topic ids: ${topics}
  journey ids: ${journeys}

Queue dashboard at ${url}/admin/queues   (a browser asks: any user name, ADMIN_TOKEN as the password)
  ADMIN_TOKEN: ${adminToken}

Try it (README.md's quick start has a command for every operation):
  curl -s -X POST '${url}/api/v2/users/track?auth_token=${demo.auth_token}' \\
       -H 'Content-Type: application/json' -d '{"id":"user-1","email":"ada@example.com","data":{"plan":"pro"}}'
  curl -sSf --retry 10 --retry-delay 1 --retry-all-errors ${url}/api/v2/users/user-1 -H 'Authorization: Bearer ${demo.api_key}'
  (the write is applied by a worker a moment after its 200: until then the read is 404, and tried again)
`);
}

main().catch((error: unknown) => {
  console.error(`launcher failed: ${error instanceof Error ? error.message : String(error)}`);
  void stop(1).then(() => process.exit(1));
});
