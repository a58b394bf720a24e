// Horizontal scaling on one machine: the drain rate with n worker processes and the intake rate
// with n gateway processes, for each n asked for, with the efficiency of each point against the
// 1-process rate of the same run and Postgres's top wait events while it was measured.
// Usage: npm run build && node bench/scale.mjs [--workers 1,2,4,8,12] [--gateways 1,2,4,6]
//   (or BENCH_WORKERS / BENCH_GATEWAYS; BENCH_RUNS, BENCH_DURATION, BENCH_DRAIN_EVENTS as elsewhere;
//   BENCH_PROFILES=partitioned measures the candidate layout of docs/scaling.md instead)
// Writes bench/results/scale.json (every run), scale.md (the table) and scale.svg (the chart).
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import postgres from "postgres";
import {
  clearQueue,
  createBenchDatabase,
  ctl,
  drainOnce,
  median,
  partitionProfiles,
  PROFILE_PARTITIONS,
  repeat,
  ROOT,
  RUNS,
  startGateway,
  uniqueName,
  walBytes,
  writeResults,
} from "./lib.mjs";

/** Per gateway, so that every gateway of a point meets the load the single one meets. */
const CONNECTIONS_PER_GATEWAY = 100;
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const DRAIN_EVENTS = Number(process.env.BENCH_DRAIN_EVENTS ?? 200_000);
const EVENTS_PER_JOB = 500;
const SAMPLE_EVERY_MS = 50;
const PARTITIONED = process.env.BENCH_PROFILES === "partitioned";

const { values: flags } = parseArgs({ options: { workers: { type: "string" }, gateways: { type: "string" } } });

/**
 * Process counts from --NAME, else BENCH_NAME, else 1,2 (enough for 2 cores). 1 is measured
 * even when not asked for: every efficiency is against it.
 */
function processCounts(name) {
  const text = flags[name] ?? process.env[`BENCH_${name.toUpperCase()}`] ?? "1,2";
  const counts = text.split(",").map(Number);
  if (!counts.every((n) => Number.isInteger(n) && n > 0)) throw new Error(`--${name}: not a list of counts: ${text}`);
  return [...new Set([1, ...counts])].sort((a, b) => a - b);
}

const WORKERS = processCounts("workers");
const GATEWAYS = processCounts("gateways");

/**
 * Polls pg_stat_activity on its own connection until stopped, counting the database's active
 * backends (other than itself) by wait event ("CPU" is an active backend waiting on nothing),
 * and the WAL written meanwhile (server-wide: nothing else runs on a benchmark's server).
 */
function watchPostgres(databaseUrl) {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const counts = {};
  let samples = 0;
  const walAtStart = walBytes(sql);
  let running = true;
  const done = (async () => {
    while (running) {
      const rows = await sql`
        SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') AS event, count(*)::int AS backends
          FROM pg_stat_activity
         WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()
         GROUP BY 1`;
      for (const { event, backends } of rows) counts[event] = (counts[event] ?? 0) + backends;
      samples += 1;
      await sleep(SAMPLE_EVERY_MS);
    }
  })();
  // Its failure comes out of stop(), if that is reached: a run that fails first drops the database
  // under it, and the run's error is the one to report.
  done.catch(() => {});
  return {
    async stop() {
      running = false;
      await done;
      const walWritten = (await walBytes(sql)) - (await walAtStart);
      await sql.end();
      return { samples, counts, walBytes: walWritten };
    },
  };
}

async function drainCurve(databaseUrl) {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  // A new project per run, so that every drain inserts its profiles anew.
  const project = async () => (await sql`INSERT INTO projects (name) VALUES ('drain') RETURNING id`)[0].id;
  const points = [];
  for (const n of WORKERS) {
    const result = await repeat(`drain, ${n} worker(s)`, async () =>
      drainOnce(databaseUrl, await project(), DRAIN_EVENTS, EVENTS_PER_JOB, {
        workers: n,
        watch: () => watchPostgres(databaseUrl),
      }),
    );
    points.push({ processes: n, rate: result.median.eventsPerSec, ...result });
  }
  await sql.end();
  return points;
}

/**
 * Starts a bench/intake-load.mjs process per URL and waits until all are ready (starting up takes
 * a while); go() sets them off together, so that their rates add up over the same seconds, and
 * returns their summaries.
 */
async function readyLoadProcesses(urls) {
  const script = join(ROOT, "bench", "intake-load.mjs");
  const children = urls.map((url) =>
    spawn(process.execPath, [script, url, String(CONNECTIONS_PER_GATEWAY), String(DURATION_S)], {
      stdio: ["pipe", "pipe", "inherit"],
    }),
  );
  const lines = children.map((child) => createInterface({ input: child.stdout })[Symbol.asyncIterator]());
  const nextLine = async (line) => {
    const { value, done } = await line.next();
    if (done) throw new Error("bench/intake-load.mjs ended without answering");
    return value;
  };
  await Promise.all(lines.map(nextLine));
  return {
    go() {
      for (const child of children) child.stdin.end();
      return Promise.all(lines.map(async (line) => JSON.parse(await nextLine(line))));
    },
  };
}

async function intakePoint(gateways, databaseUrl, authToken) {
  const queuePrefix = uniqueName("bench_scale");
  const running = [];
  // One project sends everything here: its rate limit (50,000/s by default) would cap the curve.
  const extra = { RATE_LIMIT_PER_SECOND: "10000000", RATE_LIMIT_BURST: "10000000" };
  const path = `/api/v2/users/track?auth_token=${authToken}`;
  try {
    for (let i = 0; i < gateways; i += 1) running.push(await startGateway({ databaseUrl, queuePrefix, extra }));
    const result = await repeat(`intake, ${gateways} gateway(s)`, async () => {
      const load = await readyLoadProcesses(running.map((g) => `${g.url}${path}`));
      const sampler = watchPostgres(databaseUrl);
      const runs = await load.go();
      const watched = await sampler.stop();
      await clearQueue(queuePrefix);
      const sum = (key) => runs.reduce((total, run) => total + run[key], 0);
      return {
        requestsPerSec: sum("requestsPerSec"),
        p99: Math.max(...runs.map((run) => run.p99)),
        non2xx: sum("non2xx"),
        errors: sum("errors"),
        watched,
      };
    });
    return { processes: gateways, rate: result.median.requestsPerSec, ...result };
  } finally {
    // Also after a failed run: gateways left behind would keep running on a shared machine.
    await Promise.all(running.map((g) => g.stop()));
    await clearQueue(queuePrefix);
  }
}

async function intakeCurve(databaseUrl, authToken) {
  const points = [];
  for (const n of GATEWAYS) points.push(await intakePoint(n, databaseUrl, authToken));
  return points;
}

/**
 * Adds to each point its efficiency, rate ÷ (n × the 1-process rate), Postgres's average active
 * backends over all its runs' samples (in all, and per wait event, the top 5), and for a drain the
 * median WAL written per identify applied.
 */
function withEfficiencyAndWaits(points) {
  return points.map((point) => {
    const counts = {};
    let samples = 0;
    for (const { watched } of point.runs) {
      samples += watched.samples;
      for (const [event, n] of Object.entries(watched.counts)) counts[event] = (counts[event] ?? 0) + n;
    }
    const waits = Object.entries(counts)
      .map(([event, n]) => ({ event, activeBackends: n / samples }))
      .sort((a, b) => b.activeBackends - a.activeBackends);
    // Drains only: the intake writes no WAL of its own.
    const walPerIdentify =
      point.runs[0].events === undefined ? undefined : median(point.runs.map((r) => r.watched.walBytes / r.events));
    return {
      ...point,
      walPerIdentify,
      efficiency: point.rate / (point.processes * points[0].rate),
      activeBackends: waits.reduce((total, wait) => total + wait.activeBackends, 0),
      topWaits: waits.slice(0, 5),
    };
  });
}

const fmt = (n, digits = 0) =>
  n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
const percent = (ratio) => `${Math.round(100 * ratio)}%`;
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

function markdownTable(workers, gateways) {
  const waits = (point) =>
    point.topWaits.length === 0
      ? "none active"
      : `${fmt(point.activeBackends, 1)}: ${point.topWaits.map((w) => `${w.event} ${fmt(w.activeBackends, 1)}`).join(", ")}`;
  const workerRows = workers.map(
    (p) =>
      `| ${plural(p.processes, "worker")} | ${fmt(p.rate)} identifies applied | ${percent(p.efficiency)} | — | ${fmt(p.walPerIdentify)} B | ${waits(p)} |`,
  );
  const gatewayRows = gateways.map(
    (p) =>
      `| ${plural(p.processes, "gateway")} | ${fmt(p.rate)} accepted identifies (non-2xx ${p.median.non2xx}, errors ${p.median.errors}) | ${percent(p.efficiency)} | ${p.median.p99} ms | — | ${waits(p)} |`,
  );
  return `
### Scaling on one ${cpus().length}-core machine (medians of ${RUNS} runs${PARTITIONED ? `; profiles in ${PROFILE_PARTITIONS} hash partitions` : ""})

| Processes | Per second | Efficiency | p99 | WAL per identify | Postgres: active backends (top wait events) |
|---|---|---|---|---|---|
${[...workerRows, ...gatewayRows].join("\n")}

Workers drain ${fmt(DRAIN_EVENTS)} queued identifies in jobs of ${EVENTS_PER_JOB}; gateways take ${DURATION_S} s of
identifies, each from its own load-generator process with ${CONNECTIONS_PER_GATEWAY} connections. Efficiency is
rate ÷ (n × the 1-process rate). Postgres's backends are sampled every ${SAMPLE_EVERY_MS} ms (average active
backends; CPU: waiting on nothing); WAL per identify is the bytes the server wrote during a drain ÷
its identifies (median of the runs). Postgres, Redis, the load generators and the processes share the
machine's cores: once they want more than it has, a point measures the machine. Chart: \`bench/results/scale.svg\`.
`;
}

/** A panel per curve: the measured rate (efficiency at each point) and n × the 1-process rate. */
function svgChart(panels) {
  const [width, height, top, bottom] = [440, 300, 50, 250];
  const body = panels.map(({ title, points }, i) => {
    const [left, right] = [i * width + 80, (i + 1) * width - 20];
    const maxN = points.at(-1).processes;
    const ideal = points.map((p) => [p.processes, p.processes * points[0].rate]);
    const measured = points.map((p) => [p.processes, p.rate]);
    // The y axis ends at a round number above the highest rate, so that its 5 ticks are round too.
    const highest = Math.max(...[...ideal, ...measured].map(([, rate]) => rate));
    const magnitude = 10 ** Math.floor(Math.log10(highest));
    const maxRate = [1, 1.5, 2, 3, 4, 5, 6, 8, 10].map((m) => m * magnitude).find((v) => v >= highest);
    const x = (n) => (left + (n / maxN) * (right - left)).toFixed(1);
    const y = (rate) => (bottom - (rate / maxRate) * (bottom - top)).toFixed(1);
    const line = (pts, style) =>
      `<polyline fill="none" ${style} points="${pts.map(([n, rate]) => `${x(n)},${y(rate)}`).join(" ")}"/>`;
    return [
      `<text x="${(left + right) / 2}" y="20" text-anchor="middle" font-weight="bold">${title}</text>`,
      ...[0, 1, 2, 3, 4, 5].map((k) => {
        const rate = (k * maxRate) / 5;
        return `<line x1="${left}" x2="${right}" y1="${y(rate)}" y2="${y(rate)}" stroke="#ddd"/><text x="${left - 6}" y="${Number(y(rate)) + 4}" text-anchor="end">${fmt(rate)}</text>`;
      }),
      ...points.map((p) => `<text x="${x(p.processes)}" y="${bottom + 18}" text-anchor="middle">${p.processes}</text>`),
      `<text x="${(left + right) / 2}" y="${bottom + 38}" text-anchor="middle">processes</text>`,
      line(ideal, `stroke="#888" stroke-dasharray="6 4"`),
      line(measured, `stroke="#1f6fb4" stroke-width="2"`),
      ...points.map(
        (p) =>
          `<circle cx="${x(p.processes)}" cy="${y(p.rate)}" r="3.5" fill="#1f6fb4"/><text x="${x(p.processes)}" y="${Number(y(p.rate)) - 8}" text-anchor="middle" font-size="11">${percent(p.efficiency)}</text>`,
      ),
      `<line x1="${left + 10}" x2="${left + 35}" y1="38" y2="38" stroke="#1f6fb4" stroke-width="2"/><text x="${left + 40}" y="42">measured (efficiency)</text>`,
      `<line x1="${left + 190}" x2="${left + 215}" y1="38" y2="38" stroke="#888" stroke-dasharray="6 4"/><text x="${left + 220}" y="42">n × 1-process rate</text>`,
    ].join("\n");
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width * panels.length}" height="${height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
${body.join("\n")}
</svg>
`;
}

async function main() {
  const db = await createBenchDatabase("scale");
  try {
    if (PARTITIONED) await partitionProfiles(db.url);
    const { auth_token: authToken } = ctl(db.url, ["project", "create", "--name", "bench"]);
    const workers = withEfficiencyAndWaits(await drainCurve(db.url));
    const gateways = withEfficiencyAndWaits(await intakeCurve(db.url, authToken));
    const settings = {
      runs: RUNS,
      drainEvents: DRAIN_EVENTS,
      eventsPerJob: EVENTS_PER_JOB,
      durationS: DURATION_S,
      connectionsPerGateway: CONNECTIONS_PER_GATEWAY,
      sampleEveryMs: SAMPLE_EVERY_MS,
      profilesLayout: PARTITIONED ? `${PROFILE_PARTITIONS} hash partitions` : "one table",
    };
    writeResults("scale", { settings, workers, gateways }, markdownTable(workers, gateways));
    const chart = svgChart([
      { title: "Workers: identifies applied/s", points: workers },
      { title: "Gateways: accepted identifies/s", points: gateways },
    ]);
    writeFileSync(join(ROOT, "bench", "results", "scale.svg"), chart);
  } finally {
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
