// Import benchmark: profiles imported per second by `ctl import` of an NDJSON file (the lines of
// `ctl export`) into an empty project, until one worker process has applied them all, beside a
// bare COPY of the same rows, as the workers store them, into a copy of the profiles table; in
// turns, medians of the runs; then `ctl export` of the imported project, beside a bare COPY of
// its rows to a file. Usage: npm run build && node bench/import.mjs
// (BENCH_RUNS=5 for more runs, BENCH_IMPORT_PROFILES for the file's size)
import { execFileSync, spawn } from "node:child_process";
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import postgres from "postgres";
import { storedProfileKey } from "../libs/domain/dist/index.js";
import {
  clearQueue,
  createBenchDatabase,
  ctl,
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
    while ((await queue.getJobCountByTypes("waiting", "active", "delayed")) > 0) await sleep(50);
    const seconds = (performance.now() - started) / 1000;
    if ((await queue.getFailedCount()) > 0) throw new Error("import jobs failed");
    const [{ profiles }] =
      await sql`SELECT count(*)::integer AS profiles FROM profiles WHERE project_id = ${project.id}`;
    if (profiles !== PROFILES) throw new Error(`${profiles} profiles applied of ${PROFILES}`);
    importedProjects.push(project.id);
    return { rowsPerSec: PROFILES / seconds, seconds, queuedSeconds };
  } finally {
    await worker.stop();
    await queue.close();
    redis.disconnect();
    await clearQueue(queuePrefix);
  }
}

/** The baseline: the same rows by one bare COPY into an emptied copy of the profiles table (its indexes, fillfactor and generated column). */
async function copyOnce(sql, chunks) {
  await sql`TRUNCATE copy_target`;
  const started = performance.now();
  const writable = await sql`COPY copy_target (key, external_id, created_t, last_created_t, email, data, tags)
                               FROM STDIN`.writable();
  await pipeline(Readable.from(chunks), writable);
  const seconds = (performance.now() - started) / 1000;
  return { rowsPerSec: PROFILES / seconds, seconds };
}

async function main() {
  const db = await createBenchDatabase("import");
  const dir = mkdtempSync(join(tmpdir(), "bench-import-"));
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    const file = join(dir, "profiles.ndjson");
    writeFileSync(file, Array.from({ length: PROFILES }, (_, n) => profileLine(n)).join("\n") + "\n");
    await sql.unsafe(`CREATE TABLE copy_target (LIKE profiles INCLUDING ALL) WITH (fillfactor = 50);
                      ALTER TABLE copy_target ALTER COLUMN project_id SET DEFAULT 1`);
    const { project } = ctl(db.url, ["project", "create", "--name", "copy secret"]);
    const [{ secret }] = await sql`SELECT profile_key_secret AS secret FROM projects WHERE id = ${project.id}`;
    const chunks = copyChunks(secret);
    const results = await repeatInTurns({
      "ctl import + 1 worker": () => importOnce(db.url, sql, file, dir),
      "bare COPY": () => copyOnce(sql, chunks),
      "ctl export": () => exportOnce(db.url, dir),
      "bare COPY TO": () => copyOutOnce(db.url, dir),
    });
    const exported = results["ctl export"].median;
    const copyOut = results["bare COPY TO"].median;
    const imported = results["ctl import + 1 worker"].median;
    const copy = results["bare COPY"].median;
    const share = imported.rowsPerSec / copy.rowsPerSec;
    const fmt = (n) => n.toLocaleString("en-US", { maximumFractionDigits: 0 });
    const markdown = `
### Import and export (medians of ${RUNS} runs, ${fmt(PROFILES)} profiles, 2-core machine)

| Measurement | Result | Baseline in the same run | Target |
|---|---|---|---|
| \`ctl import\` of the NDJSON lines of \`ctl export\` into an empty project, until one worker has applied every profile | **${fmt(imported.rowsPerSec)} profiles/s** (queued by the ctl in ${imported.queuedSeconds.toFixed(1)} s of ${imported.seconds.toFixed(1)} s) | bare \`COPY\` of the same rows, as the workers store them, into a copy of the profiles table: ${fmt(copy.rowsPerSec)} rows/s → ${fmt(100 * share)}% | ≥ ${TARGET_SHARE * 100}% of COPY: ${share >= TARGET_SHARE ? "met" : "not met"} |
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
