// Import benchmark: profiles imported per second by `ctl import` of an NDJSON file (the lines of
// `ctl export`) into an empty project, until one worker process has applied them all, beside a
// bare COPY of the same rows, as the workers store them, into a copy of the profiles table, and
// the ceiling the workers' statement alone reaches here; in turns, medians of the runs; then `ctl export` of the imported project, beside a bare COPY of
// its rows to a file. Usage: npm run build && node bench/import.mjs
// (BENCH_RUNS=5 for more runs, BENCH_IMPORT_PROFILES for the file's size)
import { execFileSync, spawn } from "node:child_process";
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import postgres from "postgres";
import { applyProfileWrites, profileKeySecrets } from "@cm/db";
import { isStateOperation, profileKeysWith, storedProfileKey, withStoredKeys } from "@cm/domain";
import { exportLineOperations } from "../apps/ctl/dist/import-records.js";
import { profileWrites } from "../libs/app/dist/profiles/apply-state-operations.js";
import {
  applyOnePerCore,
  clearQueue,
  createBenchDatabase,
  ctl,
  machineCpu,
  perRow,
  postgresCpu,
  postgresCpuSince,
  REDIS_URL,
  repeatInTurns,
  ROOT,
  RUNS,
  serviceEnv,
  startNode,
  uniqueName,
  writeResults,
} from "./lib.mjs";

const PROFILES = Number(process.env.BENCH_IMPORT_PROFILES ?? 100_000);
/** A job holds the operations of whole lines, this many or a few more (as the ctl queues them). */
const JOB_OPERATIONS = 500;
const TARGET_SHARE = 0.5;
const CREATED = "2026-01-01T00:00:00.000Z";
const UPDATED = "2026-06-01T00:00:00.000Z";

/** Profiles as `ctl export` writes them: an email, a few data keys, a tag on one in ten. */
function profileLine(n) {
  return JSON.stringify({
    type: "profile",
    id: `user-${n}`,
    previous_ids: [],
    email: `user-${n}@example.com`,
    phone_number: null,
    channels: [],
    data: { plan: ["free", "team", "pro"][n % 3], logins: n % 97, language: "en" },
    tags: n % 10 === 0 ? ["vip"] : [],
    unsubscribed: false,
    topics: {},
    created_at: CREATED,
    updated_at: UPDATED,
  });
}

/** COPY's text format: tab-separated, \N for null, backslash escapes. */
const copyField = (value) =>
  value === null
    ? "\\N"
    : String(value).replace(/[\\\t\n\r]/g, (c) => ({ "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r" })[c]);

/** The same profiles as the workers store them (keyed, every value stamped), as COPY text in chunks. */
function copyChunks(secret) {
  const t = Date.parse(UPDATED);
  const stamped = (v) => JSON.stringify({ t, v });
  const chunks = [];
  for (let first = 0; first < PROFILES; first += 1_000) {
    let text = "";
    for (let n = first; n < Math.min(first + 1_000, PROFILES); n += 1) {
      const data = {
        plan: { t, v: ["free", "team", "pro"][n % 3] },
        logins: { t, v: n % 97 },
        language: { t, v: "en" },
      };
      const tags = n % 10 === 0 ? { vip: { t, v: true } } : {};
      text += `${[storedProfileKey(secret, `user-${n}`), `user-${n}`, Date.parse(CREATED), Date.parse(CREATED), stamped(`user-${n}@example.com`), JSON.stringify(data), JSON.stringify(tags)].map(copyField).join("\t")}\n`;
    }
    chunks.push(text);
  }
  return chunks;
}

/** CPU per profile since the readings: Postgres's server processes, and the whole machine's (every process, both cores). */
function cpuPerProfile(machineBefore, postgresBefore) {
  return {
    postgresCpuMicros: perRow(postgresCpuSince(postgresBefore), PROFILES),
    machineCpuMicros: perRow(machineCpu() - machineBefore, PROFILES),
  };
}

/** The projects imported so far: each round's export reads the one its import made. */
const importedProjects = [];

/** `ctl export` of the latest imported project to a file, timed from the ctl's start to its end. */
async function exportOnce(databaseUrl, dir) {
  const projectId = importedProjects[importedProjects.length - 1];
  const output = join(dir, `${projectId}.export.ndjson`);
  const started = performance.now();
  // Its stdout is empty with --output (the summary goes to stderr): not ctl()'s JSON answer.
  execFileSync(
    process.execPath,
    [join(ROOT, "apps/ctl/dist/main.js"), "export", "--project", String(projectId), "--output", output],
    {
      env: { ...process.env, DATABASE_URL: databaseUrl },
      stdio: "ignore",
    },
  );
  const seconds = (performance.now() - started) / 1000;
  return { rowsPerSec: PROFILES / seconds, seconds };
}

/**
 * Its baseline: the same project's rows, as stored, by one bare COPY to a file, on a connection
 * of its own (a COPY TO left the shared one unusable for the next round's queries).
 */
async function copyOutOnce(databaseUrl, dir) {
  const projectId = importedProjects[importedProjects.length - 1];
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    const started = performance.now();
    // COPY takes no parameters; the id is the bench's own integer.
    const readable = await sql
      .unsafe(`COPY (SELECT * FROM profiles WHERE project_id = ${Number(projectId)}) TO STDOUT`)
      .readable();
    await pipeline(readable, createWriteStream(join(dir, `${projectId}.copy`)));
    const seconds = (performance.now() - started) / 1000;
    return { rowsPerSec: PROFILES / seconds, seconds };
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/** One import: a new project, the ctl's import of the file, and one worker until every profile is applied. */
async function importOnce(databaseUrl, sql, file, dir) {
  const { project } = ctl(databaseUrl, ["project", "create", "--name", "import bench"]);
  const queuePrefix = uniqueName("bench_import");
  const env = serviceEnv({ databaseUrl, queuePrefix });
  const worker = startNode("apps/worker/dist/main.js", env);
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const queue = new Queue("identify", { connection: redis, prefix: queuePrefix });
  await sleep(1500);
  try {
    const [machineBefore, postgresBefore] = [machineCpu(), postgresCpu()];
    const started = performance.now();
    const importer = spawn(
      process.execPath,
      [
        join(ROOT, "apps/ctl/dist/main.js"),
        "import",
        "--project",
        String(project.id),
        file,
        "--state",
        join(dir, `${project.id}.state.json`),
        "--rejects",
        join(dir, `${project.id}.rejects`),
      ],
      { env, stdio: ["ignore", "ignore", "pipe"] },
    );
    let stderr = "";
    importer.stderr.on("data", (chunk) => (stderr += chunk));
    const code = await new Promise((resolve) => importer.once("exit", resolve));
    if (code !== 0) throw new Error(`ctl import exited with ${code}: ${stderr}`);
    const queuedSeconds = (performance.now() - started) / 1000;
    while ((await queue.getJobCountByTypes("waiting", "prioritized", "active", "delayed")) > 0) await sleep(50);
    const seconds = (performance.now() - started) / 1000;
    const cpu = cpuPerProfile(machineBefore, postgresBefore);
    if ((await queue.getFailedCount()) > 0) throw new Error("import jobs failed");
    const [{ profiles }] =
      await sql`SELECT count(*)::integer AS profiles FROM profiles WHERE project_id = ${project.id}`;
    if (profiles !== PROFILES) throw new Error(`${profiles} profiles applied of ${PROFILES}`);
    importedProjects.push(project.id);
    return { rowsPerSec: PROFILES / seconds, seconds, queuedSeconds, ...cpu };
  } finally {
    await worker.stop();
    await queue.close();
    redis.disconnect();
    await clearQueue(queuePrefix);
  }
}

/**
 * The import's ceiling on this machine: the profile writes a worker makes of the file's jobs, built
 * beforehand (each line's operations as the ctl reads them, keyed and merged per profile as the
 * worker does), stored into a new project by the workers' statement (applyProfileWrites) from one
 * connection per core, with no ctl, queue or worker. What those add can only make an import slower.
 */
async function writeAloneOnce(databaseUrl, sql, lines) {
  const { project } = ctl(databaseUrl, ["project", "create", "--name", "import ceiling"]);
  const keyOf = profileKeysWith(await profileKeySecrets(sql, [project.id]));
  const now = Date.now();
  const context = { projectId: project.id, topicIds: new Map(), now, startedAt: now, sourceKey: "bench" };
  const jobs = [];
  let pending = [];
  lines.forEach((line, i) => {
    const converted = exportLineOperations(JSON.parse(line), { ordinal: i + 1 }, context);
    if (!converted.ok) throw new Error(converted.reason);
    pending.push(...converted.operations.map(({ operation }) => withStoredKeys(operation, keyOf)));
    if (pending.length >= JOB_OPERATIONS || i === lines.length - 1) {
      if (!pending.every(isStateOperation)) throw new Error("an import line made a link operation");
      jobs.push(profileWrites(pending));
      pending = [];
    }
  });

  const [machineBefore, postgresBefore] = [machineCpu(), postgresCpu()];
  const { seconds, cpu } = await applyOnePerCore(databaseUrl, jobs, applyProfileWrites, () =>
    cpuPerProfile(machineBefore, postgresBefore),
  );
  const [{ profiles }] = await sql`SELECT count(*)::integer AS profiles FROM profiles WHERE project_id = ${project.id}`;
  if (profiles !== PROFILES) throw new Error(`${profiles} profiles written of ${PROFILES}`);
  return { rowsPerSec: PROFILES / seconds, seconds, ...cpu };
}

/** The baseline: the same rows by one bare COPY into an emptied copy of the profiles table (its indexes, fillfactor and generated column). */
async function copyOnce(sql, chunks) {
  await sql`TRUNCATE copy_target`;
  const [machineBefore, postgresBefore] = [machineCpu(), postgresCpu()];
  const started = performance.now();
  const writable = await sql`COPY copy_target (key, external_id, created_t, last_created_t, email, data, tags)
                               FROM STDIN`.writable();
  await pipeline(Readable.from(chunks), writable);
  const seconds = (performance.now() - started) / 1000;
  return { rowsPerSec: PROFILES / seconds, seconds, ...cpuPerProfile(machineBefore, postgresBefore) };
}

async function main() {
  const db = await createBenchDatabase("import");
  const dir = mkdtempSync(join(tmpdir(), "bench-import-"));
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    const file = join(dir, "profiles.ndjson");
    const lines = Array.from({ length: PROFILES }, (_, n) => profileLine(n));
    writeFileSync(file, lines.join("\n") + "\n");
    await sql.unsafe(`CREATE TABLE copy_target (LIKE profiles INCLUDING ALL) WITH (fillfactor = 50);
                      ALTER TABLE copy_target ALTER COLUMN project_id SET DEFAULT 1`);
    const { project } = ctl(db.url, ["project", "create", "--name", "copy secret"]);
    const [{ secret }] = await sql`SELECT profile_key_secret AS secret FROM projects WHERE id = ${project.id}`;
    const chunks = copyChunks(secret);
    const results = await repeatInTurns({
      "ctl import + 1 worker": () => importOnce(db.url, sql, file, dir),
      "workers' statement alone": () => writeAloneOnce(db.url, sql, lines),
      "bare COPY": () => copyOnce(sql, chunks),
      "ctl export": () => exportOnce(db.url, dir),
      "bare COPY TO": () => copyOutOnce(db.url, dir),
    });
    const exported = results["ctl export"].median;
    const copyOut = results["bare COPY TO"].median;
    const imported = results["ctl import + 1 worker"].median;
    const copy = results["bare COPY"].median;
    const alone = results["workers' statement alone"].median;
    const share = imported.rowsPerSec / copy.rowsPerSec;
    const aloneShare = alone.rowsPerSec / copy.rowsPerSec;
    const fmt = (n) => n.toLocaleString("en-US", { maximumFractionDigits: 0 });
    const cpu = (run) =>
      `Postgres ${run.postgresCpuMicros === null ? "not local" : `${fmt(run.postgresCpuMicros)} µs`}, machine ${fmt(run.machineCpuMicros)} µs`;
    const markdown = `
### Import and export (medians of ${RUNS} runs, ${fmt(PROFILES)} profiles, 2-core machine)

| Measurement | Result | Baseline in the same run | Target |
|---|---|---|---|
| \`ctl import\` of the NDJSON lines of \`ctl export\` into an empty project, until one worker has applied every profile | **${fmt(imported.rowsPerSec)} profiles/s** (queued by the ctl in ${imported.queuedSeconds.toFixed(1)} s of ${imported.seconds.toFixed(1)} s; CPU per profile: ${cpu(imported)}) | bare \`COPY\` of the same rows, as the workers store them, into a copy of the profiles table: ${fmt(copy.rowsPerSec)} rows/s (CPU per row: ${cpu(copy)}) → ${fmt(100 * share)}% | ≥ ${TARGET_SHARE * 100}% of COPY: ${share >= TARGET_SHARE ? "met" : "not met"} |
| Ceiling: the same jobs' profile writes, built beforehand, stored by the workers' statement alone (\`applyProfileWrites\`, ${availableParallelism()} connections, no ctl, queue or worker) | **${fmt(alone.rowsPerSec)} profiles/s** (CPU per profile: ${cpu(alone)}) | COPY: ${fmt(100 * aloneShare)}% | an import stays under it; ${TARGET_SHARE * 100}% of COPY within it: ${aloneShare >= TARGET_SHARE ? "yes" : "no"} |
| \`ctl export\` of that project to a file (one snapshot, a line per profile, as read) | **${fmt(exported.rowsPerSec)} profiles/s** | bare \`COPY (SELECT * FROM profiles WHERE project_id = …) TO STDOUT\` into a file: ${fmt(copyOut.rowsPerSec)} rows/s → ${fmt((100 * exported.rowsPerSec) / copyOut.rowsPerSec)}% | none set |

A profile line here is two identifies (its creation at \`created_at\`, its values at \`updated_at\`) and, on one line in ten, a tags edit, queued as the API queues them and applied by the worker with every rule. On two cores the ctl, the worker, Postgres and Redis share the CPU: the ctl alone queues the file at about 50,000 lines/s.
`;
    writeResults("import", { profiles: PROFILES, results }, markdown);
  } finally {
    await sql.end();
    rmSync(dir, { recursive: true, force: true });
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
