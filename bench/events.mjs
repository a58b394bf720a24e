// Event benchmarks (POST /api/v2/events/track): gateway intake (accepted events/s) beside
// identify intake on the same gateway, in turns; the worker drain (events stored per second by
// one worker process), with Vero's deduplication on and off, beside a bare COPY of the same rows
// into the same partitioned table and the ceiling the workers' statement alone reaches here; and what an event costs at rest (Postgres bytes per million
// stored) and in flight (Redis memory per million queued).
// Usage: npm run build && node bench/events.mjs   (BENCH_RUNS=5 for more runs)
import { randomUUID } from "node:crypto";
import { availableParallelism } from "node:os";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import postgres from "postgres";
import { ensureEventPartitions, profileKeySecrets, storeEvents } from "@cm/db";
import { eventWithStoredKey, normalisedEventName, parseTrack, profileKeysWith } from "@cm/domain";
import { addEventBatch, eventsQueue } from "@cm/queue";
import {
  applyOnePerCore,
  clearQueue,
  cpuSeconds,
  createBenchDatabase,
  ctl,
  intake,
  load,
  perRow,
  postgresCpu,
  postgresCpuSince,
  repeatInTurns,
  REDIS_URL,
  seedEventUsers,
  serviceEnv,
  startGateway,
  startNode,
  uniqueName,
  withChangeFeedOff,
  writeResults,
} from "./lib.mjs";

const CONNECTIONS = 100;
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const DRAIN_EVENTS = Number(process.env.BENCH_DRAIN_EVENTS ?? 200_000);
const EVENTS_PER_JOB = 500;
/** Distinct users of the drain: ten events each, every one a profile already (the common case). */
const DRAIN_USERS = 20_000;
/** Distinct track bodies (and users) the intake's connections send in turn. */
const INTAKE_BODIES = 1_000;
/** EVENT_DEDUP_WINDOW_S's default, in ms: Vero's content rule. */
const DEDUP_WINDOW_MS = 300_000;
/** Each request kind first takes this much load unmeasured, so no run pays for its JIT compiling. */
const WARMUP_S = 3;
const DAY_MS = 86_400_000;

const EVENT_NAMES = ["Viewed Product", "Added to Cart", "Viewed Page", "Started Checkout", "Completed Order"];

/** A realistic track body; `n` makes the user and the data distinct (no event is a duplicate of another). */
function trackBody(n, users) {
  const sku = `A-${n % 2_000}`;
  return {
    identity: { id: `u-${n % users}`, email: `u-${n % users}@example.com` },
    event_name: EVENT_NAMES[n % EVENT_NAMES.length],
    data: {
      sku,
      price: 5 + (n % 200) / 4,
      currency: "EUR",
      url: `https://shop.example.com/products/${sku}`,
      session: `s-${Math.floor(n / users)}`,
    },
  };
}

// ---- 1. intake

async function measureIntake(databaseUrl, authToken) {
  const query = `?auth_token=${authToken}`;
  const trackRequests = Array.from({ length: INTAKE_BODIES }, (_, n) => ({
    method: "POST",
    body: JSON.stringify(trackBody(n, INTAKE_BODIES)),
  }));
  const queuePrefix = uniqueName("bench_events_intake");
  const gateway = await startGateway({ databaseUrl, queuePrefix });
  try {
    const measure = (kind, duration) => async () => {
      const run =
        kind === "track"
          ? await load({
              url: `${gateway.url}/api/v2/events/track${query}`,
              method: "POST",
              headers: { "content-type": "application/json" },
              connections: CONNECTIONS,
              duration,
              requests: trackRequests,
            })
          : await intake(gateway.url, `/api/v2/users/track${query}`, CONNECTIONS, duration);
      await clearQueue(queuePrefix);
      return run;
    };
    await measure("track", WARMUP_S)();
    await measure("identify", WARMUP_S)();
    const results = await repeatInTurns({
      "events/track": measure("track", DURATION_S),
      "users/track (identify)": measure("identify", DURATION_S),
    });
    return { track: results["events/track"], identify: results["users/track (identify)"] };
  } finally {
    await gateway.stop();
    await clearQueue(queuePrefix);
  }
}

// ---- 2. drain and 3. sizes

/** The drain's events, as the gateway's parseTrack builds them (one receive time per 100 events). */
function drainEvents(projectId, dedupWindowMs) {
  const start = Date.now();
  return Array.from({ length: DRAIN_EVENTS }, (_, n) => {
    const parsed = parseTrack(trackBody(n, DRAIN_USERS), {
      projectId,
      receivedAt: start + Math.floor(n / 100),
      eventId: randomUUID(),
      dedupWindowMs,
    });
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
    return parsed.value;
  });
}

/** The events in jobs of EVENTS_PER_JOB, as the gateway's micro-batches queue them at most. */
function inJobs(events) {
  const jobs = [];
  for (let first = 0; first < events.length; first += EVENTS_PER_JOB)
    jobs.push(events.slice(first, first + EVENTS_PER_JOB));
  return jobs;
}

/** COPY's text format: tab-separated, \N for null, backslash escapes. */
const copyField = (value) =>
  value === null || value === undefined
    ? "\\N"
    : String(value).replace(/[\\\t\n\r]/g, (c) => ({ "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r" })[c]);

/** The rows storeEvents writes for `events` (keyed as the worker keys them), as COPY text in chunks of a job's size. */
function copyChunks(events, keyOf) {
  const chunks = [];
  for (let first = 0; first < events.length; first += EVENTS_PER_JOB) {
    let text = "";
    for (const e of events.slice(first, first + EVENTS_PER_JOB)) {
      text += `${[
        e.projectId,
        keyOf(e.projectId, e.userId),
        e.eventId,
        e.name,
        normalisedEventName(e.name),
        e.data === null ? null : JSON.stringify(e.data),
        e.source ?? null,
        new Date(e.t).toISOString(),
        new Date(e.receivedAt).toISOString(),
      ]
        .map(copyField)
        .join("\t")}\n`;
    }
    chunks.push(text);
  }
  return chunks;
}

async function redisUsedMemory(redis) {
  const info = await redis.info("memory");
  return Number(/used_memory:(\d+)/.exec(info)[1]);
}

/** Bytes of the events table (every partition: heap, TOAST and index) and of event_keys. */
async function tableSizes(sql) {
  await sql`VACUUM (ANALYZE) events`;
  await sql`VACUUM (ANALYZE) event_keys`;
  const [row] = await sql`
    SELECT (SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('events'))::float8 AS events,
           (SELECT sum(pg_indexes_size(relid)) FROM pg_partition_tree('events'))::float8 AS events_index,
           pg_total_relation_size('event_keys')::float8 AS keys,
           (SELECT count(*) FROM events)::float8 AS rows`;
  return row;
}

async function emptyTables(sql) {
  await sql`TRUNCATE events, event_keys, changes`;
  await sql`CHECKPOINT`;
}

/** Measures one run's sizes, scaled to a million events stored. */
async function sizesPerMillion(sql) {
  const sizes = await tableSizes(sql);
  if (sizes.rows !== DRAIN_EVENTS) throw new Error(`${sizes.rows} events stored, not ${DRAIN_EVENTS}`);
  const perMillion = (bytes) => (bytes * 1e6) / sizes.rows;
  return {
    eventsBytesPerMillion: perMillion(sizes.events),
    eventsIndexBytesPerMillion: perMillion(sizes.events_index),
    eventKeysBytesPerMillion: perMillion(sizes.keys),
  };
}

/**
 * Fills a paused events queue with the events in jobs of 500 (addEventBatch, as the gateway's
 * micro-batches), reads Redis's memory for them, then times one worker process from resume to empty.
 */
async function drainOnce(databaseUrl, sql, events) {
  await emptyTables(sql);
  const queuePrefix = uniqueName("bench_events_drain");
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const queue = eventsQueue(redis, queuePrefix);
  await queue.pause();
  const before = await redisUsedMemory(redis);
  for (const job of inJobs(events)) await addEventBatch(queue, job);
  const redisBytes = (await redisUsedMemory(redis)) - before;

  const worker = startNode("apps/worker/dist/main.js", serviceEnv({ databaseUrl, queuePrefix }));
  try {
    await sleep(2000);
    const [workerBefore, postgresBefore] = [cpuSeconds(worker.child.pid), postgresCpu()];
    const started = performance.now();
    await queue.resume();
    while ((await queue.getJobCountByTypes("waiting", "active", "delayed", "paused")) > 0) await sleep(20);
    const seconds = (performance.now() - started) / 1000;
    const postgresSeconds = postgresCpuSince(postgresBefore);
    const workerSeconds = cpuSeconds(worker.child.pid) - workerBefore;
    const failed = await queue.getFailedCount();
    if (failed > 0) throw new Error(`${failed} drain jobs failed`);
    return {
      eventsPerSec: events.length / seconds,
      seconds,
      postgresCpuMicros: perRow(postgresSeconds, events.length),
      workerCpuMicros: perRow(workerSeconds, events.length),
      redisBytesPerMillion: (redisBytes * 1e6) / events.length,
      ...(await sizesPerMillion(sql)),
    };
  } finally {
    await worker.stop();
    await queue.obliterate({ force: true });
    await queue.close();
    redis.disconnect();
    await clearQueue(queuePrefix); // the worker's other queues
  }
}

/**
 * The drain's ceiling on this machine: the same jobs stored by the workers' statement (storeEvents)
 * from one connection per core, fed events built beforehand, with no queue and no worker. What
 * the worker adds (Redis, job JSON, keying) can only make the drain slower than this.
 */
async function storeAloneOnce(databaseUrl, sql, events) {
  await emptyTables(sql);
  const postgresBefore = postgresCpu();
  const { seconds, cpu } = await applyOnePerCore(databaseUrl, inJobs(events), storeEvents, () =>
    perRow(postgresCpuSince(postgresBefore), events.length),
  );
  return { eventsPerSec: events.length / seconds, seconds, postgresCpuMicros: cpu };
}

/** The baseline: the same rows in one bare COPY through postgres.js, into the same (emptied) table. */
async function copyOnce(sql, chunks) {
  await emptyTables(sql);
  const postgresBefore = postgresCpu();
  const started = performance.now();
  const writable =
    await sql`COPY events (project_id, user_key, id, name, name_key, data, source, created_at, received_at)
                             FROM STDIN`.writable();
  await pipeline(Readable.from(chunks), writable);
  const seconds = (performance.now() - started) / 1000;
  const postgresCpuMicros = perRow(postgresCpuSince(postgresBefore), DRAIN_EVENTS);
  return { eventsPerSec: DRAIN_EVENTS / seconds, seconds, postgresCpuMicros, ...(await sizesPerMillion(sql)) };
}

async function measureDrain(databaseUrl) {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    const now = Date.now();
    await ensureEventPartitions(sql, now - DAY_MS, now + DAY_MS);
    const [{ id: projectId }] = await sql`INSERT INTO projects (name) VALUES ('events drain') RETURNING id`;
    const keyOf = profileKeysWith(await profileKeySecrets(sql, [projectId]));
    // The drain's users are profiles already, so that it measures storing events (a user who is
    // none gets one made, by the identify rules, the first time).
    await seedEventUsers(sql, projectId, keyOf, DRAIN_USERS, now - 60_000);
    // As autovacuum would have by now on a live database: planned on the empty table's
    // statistics, a job's profile lookup read every profile of the project (bench/README.md).
    await sql`ANALYZE profiles`;
    const withDedup = drainEvents(projectId, DEDUP_WINDOW_MS);
    const withoutDedup = drainEvents(projectId, 0);
    if (withDedup.some((e) => e.dedupKey === undefined) || withoutDedup.some((e) => e.dedupKey !== undefined))
      throw new Error("deduplication keys not as intended");
    const chunks = copyChunks(withoutDedup, keyOf);
    const keyed = (events) => events.map((event) => eventWithStoredKey(event, keyOf));
    const [keyedWithDedup, keyedWithoutDedup] = [keyed(withDedup), keyed(withoutDedup)];
    const results = await repeatInTurns({
      "worker drain, dedup on": () => drainOnce(databaseUrl, sql, withDedup),
      "worker drain, dedup on, change feed off": () =>
        withChangeFeedOff(databaseUrl, () => drainOnce(databaseUrl, sql, withDedup)),
      "worker drain, dedup off": () => drainOnce(databaseUrl, sql, withoutDedup),
      "Postgres alone, dedup on": () => storeAloneOnce(databaseUrl, sql, keyedWithDedup),
      "Postgres alone, dedup off": () => storeAloneOnce(databaseUrl, sql, keyedWithoutDedup),
      "bare COPY": () => copyOnce(sql, chunks),
    });
    await emptyTables(sql);
    return {
      dedupOn: results["worker drain, dedup on"],
      feedOff: results["worker drain, dedup on, change feed off"],
      dedupOff: results["worker drain, dedup off"],
      aloneDedupOn: results["Postgres alone, dedup on"],
      aloneDedupOff: results["Postgres alone, dedup off"],
      copy: results["bare COPY"],
    };
  } finally {
    await sql.end();
  }
}

const fmt = (n, digits = 0) =>
  n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
const mb = (bytes) => `${fmt(bytes / 1024 / 1024, 1)} MiB`;
const pct = (a, b) => `${fmt((100 * a) / b)}%`;
const met = (ok) => (ok ? "met" : "not met");
/** A run's median CPU per event: Postgres (every server process), and the worker's when it ran. */
const cpu = (run) =>
  [
    run.postgresCpuMicros === undefined ? "Postgres not local" : `Postgres ${fmt(run.postgresCpuMicros, 1)} µs`,
    ...(run.workerCpuMicros === undefined ? [] : [`worker ${fmt(run.workerCpuMicros, 1)} µs`]),
  ].join(", ");

async function main() {
  const db = await createBenchDatabase("events");
  try {
    const { auth_token: authToken } = ctl(db.url, ["project", "create", "--name", "bench"]);
    const intakeResults = await measureIntake(db.url, authToken);
    const drain = await measureDrain(db.url);

    const track = intakeResults.track.median;
    const identify = intakeResults.identify.median;
    const on = drain.dedupOn.median;
    const off = drain.dedupOff.median;
    const copy = drain.copy.median;
    const [aloneOn, aloneOff] = [drain.aloneDedupOn.median, drain.aloneDedupOff.median];
    const reachable = (run) => (run.eventsPerSec >= copy.eventsPerSec / 2 ? "yes" : "no");
    const markdown = `
### Events (medians of ${intakeResults.track.runs.length} runs, 2-core machine)

| Measurement | Result | Baseline in the same run | Target |
|---|---|---|---|
| Gateway intake, accepted events/s (\`POST /api/v2/events/track\`, ${CONNECTIONS} connections, ${DURATION_S} s, ${fmt(INTAKE_BODIES)} distinct users) | **${fmt(track.requestsPerSec)}** (p50 ${track.p50} ms, p99 ${track.p99} ms, non-2xx ${track.non2xx}) | identify intake, same gateway, in turns: ${fmt(identify.requestsPerSec)} (p50 ${identify.p50} ms, p99 ${identify.p99} ms, non-2xx ${identify.non2xx}) → ${pct(track.requestsPerSec, identify.requestsPerSec)} | ≥ identify: ${met(track.requestsPerSec >= identify.requestsPerSec)} |
| Worker drain, events stored/s (1 process, ${fmt(DRAIN_EVENTS)} events in jobs of ${EVENTS_PER_JOB}, Vero deduplication on: ${DEDUP_WINDOW_MS / 1000} s window) | **${fmt(on.eventsPerSec)}** (CPU per event: ${cpu(on)}) | bare \`COPY events FROM STDIN\` of the same rows: ${fmt(copy.eventsPerSec)} (CPU per event: ${cpu(copy)}) → ${pct(on.eventsPerSec, copy.eventsPerSec)} | ≥ 50% of COPY: ${met(on.eventsPerSec >= copy.eventsPerSec / 2)} |
| Same (deduplication on), change feed on beside off ([docs/changes.md](docs/changes.md)) | **${fmt(on.eventsPerSec)}** (the row above) | the same drain with the capture's triggers disabled: ${fmt(drain.feedOff.median.eventsPerSec)} (CPU per event: ${cpu(drain.feedOff.median)}) → feed on is ${pct(on.eventsPerSec, drain.feedOff.median.eventsPerSec)} of off (each round: ${drain.dedupOn.runs.map((run, i) => pct(run.eventsPerSec, drain.feedOff.runs[i].eventsPerSec)).join(", ")}) | ≥ 75% of off: ${met(on.eventsPerSec >= 0.75 * drain.feedOff.median.eventsPerSec)} |
| Same, deduplication off (window 0, no idempotency key) | **${fmt(off.eventsPerSec)}** (CPU per event: ${cpu(off)}) | COPY: ${pct(off.eventsPerSec, copy.eventsPerSec)}; deduplication costs ${pct(off.eventsPerSec - on.eventsPerSec, off.eventsPerSec)} of the drain rate | ≥ 50% of COPY: ${met(off.eventsPerSec >= copy.eventsPerSec / 2)} |
| Ceiling: the same jobs stored by the workers' statement alone (\`storeEvents\`, ${availableParallelism()} connections, events built beforehand, no queue, no worker), deduplication on / off | **${fmt(aloneOn.eventsPerSec)}** / **${fmt(aloneOff.eventsPerSec)}** (CPU per event: ${cpu(aloneOn)} / ${cpu(aloneOff)}) | COPY: ${pct(aloneOn.eventsPerSec, copy.eventsPerSec)} / ${pct(aloneOff.eventsPerSec, copy.eventsPerSec)} | a worker's drain stays under it; 50% of COPY within it: ${reachable(aloneOn)} / ${reachable(aloneOff)} |

| Per million events | Bytes |
|---|---|
| Postgres \`events\` (every partition: heap, TOAST, index) | **${mb(on.eventsBytesPerMillion)}** (index ${mb(on.eventsIndexBytesPerMillion)}; by COPY: ${mb(copy.eventsBytesPerMillion)}) |
| Postgres \`event_keys\` (deduplication on) | **${mb(on.eventKeysBytesPerMillion)}** |
| Redis while queued (\`used_memory\`), deduplication on / off | **${mb(on.redisBytesPerMillion)}** / ${mb(off.redisBytesPerMillion)} |

Drain: the users (${fmt(DRAIN_USERS)}, ten events each) are profiles already; events are built by \`parseTrack\` as the
gateway builds them, all distinct, stamped now (today's partition); \`events\` and \`event_keys\` are emptied before each
drain and each COPY, which take turns. Sizes after \`VACUUM\`. CPU per event: user + system time over the drain (or
the COPY) of every Postgres server process and of the worker process, from /proc; the machine's 2 cores bound their sum.
`;
    writeResults(
      "events",
      {
        settings: {
          connections: CONNECTIONS,
          durationS: DURATION_S,
          drainEvents: DRAIN_EVENTS,
          eventsPerJob: EVENTS_PER_JOB,
          drainUsers: DRAIN_USERS,
          intakeBodies: INTAKE_BODIES,
          dedupWindowMs: DEDUP_WINDOW_MS,
        },
        intake: intakeResults,
        drain,
      },
      markdown,
    );
  } finally {
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
