// Shared helpers for the benchmarks: processes, databases, autocannon runs, medians, results.
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import postgres from "postgres";
import { applyProfileWrites, connect } from "@cm/db";
import { PROFILE_OPERATIONS_JOB } from "@cm/queue";
import { profileWrites } from "../libs/app/dist/profiles/apply-state-operations.js";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const ADMIN_DATABASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
/** Several runs per measurement; the median is reported. BENCH_RUNS overrides (minimum 3). */
export const RUNS = Math.max(3, Number(process.env.BENCH_RUNS ?? 3));

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

export function uniqueName(label) {
  return `${label}_${randomBytes(3).toString("hex")}`;
}

/** A new database, migrated with the ctl, dropped by the returned function. */
export async function createBenchDatabase(label) {
  const name = uniqueName(`cm_bench_${label}`);
  const admin = postgres(ADMIN_DATABASE_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(ADMIN_DATABASE_URL);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  ctl(databaseUrl, ["migrate"]);
  return {
    url: databaseUrl,
    async drop() {
      const cleanup = postgres(ADMIN_DATABASE_URL, { max: 1, onnotice: () => {} });
      await cleanup.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await cleanup.end();
    },
  };
}

/** Runs `npm run ctl -- args` against a database and returns its JSON answer. */
export function ctl(databaseUrl, args) {
  const out = execFileSync(process.execPath, [join(ROOT, "apps/ctl/dist/main.js"), ...args], {
    env: { ...process.env, DATABASE_URL: databaseUrl },
    encoding: "utf8",
  });
  return JSON.parse(out);
}

export function serviceEnv({ databaseUrl, queuePrefix, port = 0, extra = {} }) {
  return {
    PATH: process.env.PATH,
    DATABASE_URL: databaseUrl,
    REDIS_URL,
    QUEUE_PREFIX: queuePrefix,
    PORT: String(port),
    METRICS_PORT: "0",
    LOG_LEVEL: "warn",
    // Benchmarks run on a Redis without persistence (this machine's, or many-core/run.sh's).
    REDIS_DURABILITY: "warn",
    ...extra,
  };
}

/** Starts a node script of the repo as a child process; `stop()` sends SIGTERM and waits. */
export function startNode(script, env, args = []) {
  const child = spawn(process.execPath, [join(ROOT, script), ...args], {
    env,
    stdio: ["ignore", "inherit", "inherit"],
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  return {
    child,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}

export async function waitForHttp(url, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const response = await fetch(url).catch(() => null);
    if (response?.ok) return;
    await sleep(100);
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms`);
}

export async function freePort() {
  const { createServer } = await import("node:net");
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Starts the real gateway process and waits until /readyz answers. */
export async function startGateway({ databaseUrl, queuePrefix, extra }) {
  const port = await freePort();
  const process_ = startNode("apps/gateway/dist/main.js", serviceEnv({ databaseUrl, queuePrefix, port, extra }));
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/readyz`);
  return { ...process_, url };
}

/**
 * What an autocannon run measured: requests/s (mean over the run), latency percentiles in ms,
 * and counts of non-2xx answers and socket errors, so a run that "succeeds" by failing is visible.
 */
export function summarize(result) {
  return {
    requestsPerSec: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    total: result.requests.total,
  };
}

/** One autocannon run, summarized; it ends early once `stopOn` (a promise) settles. */
export async function load({
  url,
  method = "GET",
  headers = {},
  body,
  requests,
  connections = 100,
  duration = 10,
  pipelining = 1,
  stopOn,
}) {
  const run = autocannon({
    url,
    method,
    headers,
    body,
    requests,
    connections,
    duration,
    pipelining,
  });
  stopOn?.then(() => run.stop());
  return summarize(await run);
}

function withMedians(runs) {
  const medians = {};
  for (const key of Object.keys(runs[0])) {
    if (typeof runs[0][key] === "number") medians[key] = median(runs.map((run) => run[key]));
  }
  return { runs, median: medians };
}

/** Runs `measure` RUNS times and keeps every run plus the median of each numeric field. */
export async function repeat(label, measure) {
  const runs = [];
  for (let i = 0; i < RUNS; i += 1) {
    const run = await measure(i);
    console.error(`  ${label} run ${i + 1}/${RUNS}: ${JSON.stringify(run)}`);
    runs.push(run);
  }
  return withMedians(runs);
}

/**
 * Like `repeat` for several measurements `{name: measure}` that take turns, one run each per
 * round, so that all of them meet the same machine load (which drifts on a shared VM). With
 * `warmUp`, each first runs once unmeasured; with `rotate`, each round starts one measurement
 * further than the round before, so that no measurement always runs first, after whatever ran
 * before the rounds; with `alternate`, every other round runs them in the reverse order, so that
 * none always follows the same one (and whatever it leaves behind: a Redis rewriting its AOF, a
 * collection).
 */
export async function repeatInTurns(measurements, { warmUp = false, rotate = false, alternate = false } = {}) {
  const names = Object.keys(measurements);
  const runs = Object.fromEntries(names.map((name) => [name, []]));
  if (warmUp) {
    for (const name of names)
      console.error(`  ${name} warm-up (not measured): ${JSON.stringify(await measurements[name]())}`);
  }
  for (let i = 0; i < RUNS; i += 1) {
    const order = rotate ? names.map((_, j) => names[(i + j) % names.length]) : [...names];
    if (alternate && i % 2 === 1) order.reverse();
    for (const name of order) {
      const run = await measurements[name]();
      console.error(`  ${name} run ${i + 1}/${RUNS}: ${JSON.stringify(run)}`);
      runs[name].push(run);
    }
  }
  return Object.fromEntries(Object.entries(runs).map(([name, list]) => [name, withMedians(list)]));
}

export function machineInfo() {
  return { node: process.version, cpus: cpus().length, date: new Date().toISOString() };
}

/** Writes bench/results/NAME.json (every run) and NAME.md (the table for docs/performance.md). */
export function writeResults(name, data, markdown) {
  const base = join(ROOT, "bench", "results", name);
  writeFileSync(`${base}.json`, `${JSON.stringify({ ...data, machine: machineInfo() }, null, 2)}\n`);
  writeFileSync(`${base}.md`, `${markdown.trim()}\n`);
  console.log(markdown);
}

// ---- profiles layouts and their WAL, shared by write-cost.mjs and scale.mjs

/**
 * Bytes of WAL Postgres has inserted so far, server-wide: exact at once (pg_stat_wal's record
 * and full-page counts reach it only when each backend next reports, up to seconds later).
 */
export async function walBytes(sql) {
  const [{ bytes }] = await sql`SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::float8 AS bytes`;
  return bytes;
}

export const PROFILE_PARTITIONS = 16;

/**
 * DDL for a table `name` with the columns, defaults and keys of `template` (a profiles table as
 * the migrations made it) and its fillfactor, either as one table or split into 16 hash
 * partitions of (project_id, key): a layout measured as a candidate (docs/scaling.md), which no
 * migration makes.
 */
export function profilesTableDdl(name, template, { partitioned }) {
  if (!partitioned) return `CREATE TABLE ${name} (LIKE ${template} INCLUDING ALL) WITH (fillfactor = 50);`;
  const partitions = Array.from(
    { length: PROFILE_PARTITIONS },
    (_, r) =>
      `CREATE TABLE ${name}_${r} PARTITION OF ${name} FOR VALUES WITH (MODULUS ${PROFILE_PARTITIONS}, REMAINDER ${r}) WITH (fillfactor = 50);`,
  );
  return `CREATE TABLE ${name} (LIKE ${template} INCLUDING ALL) PARTITION BY HASH (project_id, key);\n${partitions.join("\n")}`;
}

/** Replaces a benchmark database's (empty) profiles table with the partitioned candidate. */
export async function partitionProfiles(databaseUrl) {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  await sql.unsafe(`ALTER TABLE profiles RENAME TO profiles_template;
                    ${profilesTableDdl("profiles", "profiles_template", { partitioned: true })}
                    DROP TABLE profiles_template;`);
  await sql.end();
}

// ---- identify load and drain, shared by identify.mjs and scale.mjs

export function identifyFields(n) {
  const id = `user-${n % 100_000}`;
  return {
    id,
    email: `${id}@example.com`,
    channels: [{ type: "push", address: `device-${n % 100_000}`, platform: n % 2 ? "ios" : "android" }],
    data: {
      plan: ["free", "team", "pro"][n % 3],
      logins: n % 97,
      language: "en",
      last_seen: new Date(1_700_000_000_000 + n).toISOString(),
    },
  };
}

/**
 * Distinct identify requests, each connection sending them in turn; `bodyFields` (a credential
 * in the body, as RudderStack and Vero's gems send it) lead each body. They are built before the
 * run, so that autocannon, on the same two cores, spends its CPU sending rather than building
 * JSON (the services do the same work for any body: no worker runs during intake).
 */
export function intakeRequests(bodyFields = {}) {
  return Array.from({ length: 500 }, (_, n) => ({
    method: "POST",
    body: JSON.stringify({ ...bodyFields, ...identifyFields(n) }),
  }));
}

const INTAKE_REQUESTS = intakeRequests();

/** `count` distinct `POST /batch` bodies of `size` identifies each, every body naming other users. */
export function batchRequests(size, count = 20) {
  return Array.from({ length: count }, (_, b) => ({
    method: "POST",
    body: JSON.stringify({
      batch: Array.from({ length: size }, (_, i) => ({ type: "identify", ...identifyFields(b * size + i) })),
    }),
  }));
}

/** Batches (`batchRequests`) against one gateway, for `duration` seconds. */
export async function batchIntake(url, authToken, requests, connections, duration) {
  return load({
    url: `${url}/api/v2/batch?auth_token=${authToken}`,
    method: "POST",
    headers: { "content-type": "application/json" },
    connections,
    duration,
    requests,
  });
}

/** Identify requests with distinct bodies against one gateway, for `duration` seconds. */
export async function intake(url, path, connections = 100, duration = 10, requests = INTAKE_REQUESTS) {
  return load({
    url: `${url}${path}`,
    method: "POST",
    headers: { "content-type": "application/json" },
    connections,
    duration,
    requests,
  });
}

export async function clearQueue(prefix) {
  const redis = new Redis(REDIS_URL);
  const keys = await redis.keys(`${prefix}:*`);
  for (let i = 0; i < keys.length; i += 1000) await redis.del(...keys.slice(i, i + 1000));
  redis.disconnect();
}

/** One queued identify; every profile gets two updates over a drain, as a half-new, half-update mix. */
export function identifyEvent(projectId, n, totalEvents) {
  const id = `user-${n % Math.floor(totalEvents / 2)}`;
  return {
    projectId,
    key: `i:${id}`,
    id,
    t: 1_700_000_000_000 + n,
    updateOnly: false,
    email: `${id}@example.com`,
    data: { plan: ["free", "team", "pro"][n % 3], logins: n % 97, language: "en" },
    channels: [
      { type: "push", address: `device-${n % Math.floor(totalEvents / 2)}`, platform: n % 2 ? "ios" : "android" },
    ],
  };
}

/**
 * The mixed traffic, by position in every hundred: 70 identifies, 10 edits, 10 tag
 * edits, 5 unsubscribes or resubscribes, 3 deletes and 2 reidentifies, over the same users as
 * the identifies (so edits, tags and erasures meet existing profiles).
 */
export function mixedOperation(projectId, n, totalEvents) {
  const slot = n % 100;
  if (slot < 70) return identifyEvent(projectId, n, totalEvents);
  const id = `user-${n % Math.floor(totalEvents / 2)}`;
  const base = { projectId, key: `i:${id}`, id, t: 1_700_000_000_000 + n };
  if (slot < 80) return { ...base, op: "edit", changes: { plan: n % 2 ? "team" : null, seats: n % 50 } };
  if (slot < 90) return { ...base, op: "tags", add: [`tag-${n % 7}`, "active"], remove: [`tag-${(n + 3) % 7}`] };
  if (slot < 95) return { ...base, op: "subscription", unsubscribed: n % 2 === 0 };
  if (slot < 98) return { ...base, op: "delete" };
  return { ...base, op: "reidentify", newId: `${id}-renamed`, newKey: `i:${id}-renamed` };
}

/**
 * Fills a paused queue with `operationAt(projectId, n, totalEvents)` for every n, starts
 * `workers` worker processes, and times them from resume to empty. `watch`, if given, starts a
 * sampler at resume that is stopped once the queue is empty, so that it sees the drain and not
 * the filling; what its `stop()` returns comes back as `watched`.
 */
export async function drainOnce(
  databaseUrl,
  projectId,
  totalEvents,
  eventsPerJob,
  { workers = 1, operationAt = identifyEvent, watch } = {},
) {
  const queuePrefix = uniqueName("bench_drain");
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const queue = new Queue("identify", {
    connection: redis,
    prefix: queuePrefix,
    defaultJobOptions: { removeOnComplete: true },
  });
  await queue.pause();
  const jobs = [];
  for (let first = 0; first < totalEvents; first += eventsPerJob) {
    const events = [];
    for (let n = first; n < Math.min(first + eventsPerJob, totalEvents); n += 1)
      events.push(operationAt(projectId, n, totalEvents));
    jobs.push({ name: PROFILE_OPERATIONS_JOB, data: { events } });
  }
  for (let i = 0; i < jobs.length; i += 1000) await queue.addBulk(jobs.slice(i, i + 1000));

  const workerProcesses = Array.from({ length: workers }, () =>
    startNode("apps/worker/dist/main.js", serviceEnv({ databaseUrl, queuePrefix })),
  );
  await sleep(1500);
  const started = performance.now();
  const watcher = watch?.();
  await queue.resume();
  while ((await queue.getJobCountByTypes("waiting", "active", "delayed", "paused")) > 0) await sleep(20);
  const seconds = (performance.now() - started) / 1000;
  const watched = await watcher?.stop();
  const failed = await queue.getFailedCount();
  await Promise.all(workerProcesses.map((worker) => worker.stop()));
  await queue.obliterate({ force: true });
  await queue.close();
  redis.disconnect();
  await clearQueue(queuePrefix); // the workers' other queues
  if (failed > 0) throw new Error(`${failed} drain jobs failed`);
  return { eventsPerSec: totalEvents / seconds, seconds, events: totalEvents, watched };
}

/** User + system CPU seconds of a process so far (Linux /proc; 10 ms ticks); 0 once it is gone. */
export function cpuSeconds(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** CPU seconds of every Postgres server process on this machine (backends, WAL writer, checkpointer...). */
export function postgresCpu() {
  const spent = new Map();
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    let command = "";
    try {
      command = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      continue;
    }
    if (command.startsWith("postgres")) spent.set(pid, cpuSeconds(pid));
  }
  return spent;
}

/** Postgres CPU seconds since `before` (processes started since count whole); null when Postgres is not local. */
export function postgresCpuSince(before) {
  const after = postgresCpu();
  if (after.size === 0) return null;
  let seconds = 0;
  for (const [pid, spent] of after) seconds += spent - (before.get(pid) ?? 0);
  return seconds;
}

/** µs per row (an event, a profile), or null when not measured. */
export const perRow = (seconds, rows) => (seconds === null ? null : (seconds * 1e6) / rows);

/** Busy CPU seconds of the whole machine so far, every core (Linux /proc/stat: all but idle and iowait). */
export function machineCpu() {
  const [user, nice, system, , , irq, softirq, steal] = readFileSync("/proc/stat", "utf8")
    .split("\n")[0]
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return (user + nice + system + irq + softirq + steal) / 100;
}

/**
 * A ceiling: applies every job with `apply(pool, job)` from one connection per core, each taking
 * the next job once done with its own (as workers drain a queue). Returns the seconds it took and
 * what `measureCpu()` read once the jobs were done: before the pool closes, for the CPU of its
 * Postgres backends is counted only while they run.
 */
export async function applyOnePerCore(databaseUrl, jobs, apply, measureCpu) {
  const connections = availableParallelism();
  const pool = connect(databaseUrl, { max: connections });
  try {
    const started = performance.now();
    let next = 0;
    const applyJobs = async () => {
      for (let job = next++; job < jobs.length; job = next++) await apply(pool, jobs[job]);
    };
    await Promise.all(Array.from({ length: connections }, applyJobs));
    const seconds = (performance.now() - started) / 1000;
    return { seconds, cpu: measureCpu() };
  } finally {
    await pool.end();
  }
}

/**
 * `measure` with the change feed's capture off (docs/changes.md): its triggers, the only user
 * triggers of `profiles` and `events`, disabled, then enabled again. For a drain beside the same
 * drain with the feed on, in turns.
 */
export async function withChangeFeedOff(databaseUrl, measure) {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const capture = (action) =>
    sql.unsafe(`ALTER TABLE profiles ${action} TRIGGER USER; ALTER TABLE events ${action} TRIGGER USER`);
  try {
    await capture("DISABLE");
    return await measure();
  } finally {
    await capture("ENABLE");
    await sql.end();
  }
}

/**
 * Makes users `u-0` … `u-(count - 1)` of a project profiles (identified at `t`, with an email),
 * 500 a statement, keyed by `keyOf`: the users of the events benches, profiles already as most
 * users who send events are.
 */
export async function seedEventUsers(sql, projectId, keyOf, count, t) {
  for (let first = 0; first < count; first += 500) {
    const identifies = Array.from({ length: Math.min(500, count - first) }, (_, i) => ({
      projectId,
      key: keyOf(projectId, `u-${first + i}`),
      id: `u-${first + i}`,
      email: `u-${first + i}@example.com`,
      t,
      updateOnly: false,
    }));
    await applyProfileWrites(sql, profileWrites(identifies));
  }
}

/** A redis-server of the bench's own, as docs/operations-redis.md runs one; `settings` added. */
export async function startRedis(settings = []) {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "cm-bench-redis-"));
  const child = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "yes"].concat([
      "--appendfsync",
      "everysec",
      "--maxmemory-policy",
      "noeviction",
      ...settings,
    ]),
    { stdio: "ignore" },
  );
  const client = new Redis({ port, host: "127.0.0.1", retryStrategy: () => 50 });
  client.on("error", () => {});
  await client.ping();
  return {
    port,
    pid: child.pid,
    client,
    async stop() {
      client.disconnect();
      child.kill("SIGKILL");
      await new Promise((resolve) => child.once("exit", resolve));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
