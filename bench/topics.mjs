// Topic default fan-out benchmark: profiles given a new default per second by the chunked
// fan-out (one worker process, docs/topics.md), beside the same work done as one UPDATE
// statement (the ceiling), on a project of 1,000,000 profiles (10% with an explicit choice),
// while identify traffic keeps flowing. Usage: npm run build && node bench/topics.mjs
// (BENCH_RUNS=5 for more runs, BENCH_PROFILES / BENCH_IDENTIFY_RATE to change the load).
import autocannon from "autocannon";
import { setTimeout as sleep } from "node:timers/promises";
import postgres from "postgres";
import {
  clearQueue,
  createBenchDatabase,
  ctl,
  median,
  repeatInTurns,
  serviceEnv,
  startGateway,
  startNode,
  summarize,
  uniqueName,
  writeResults,
} from "./lib.mjs";

const PROFILES = Number(process.env.BENCH_PROFILES ?? 1_000_000);
const EXPLICIT_EVERY = 10;
const WITHOUT_CHOICE = PROFILES - Math.floor(PROFILES / EXPLICIT_EVERY);
/** Identify requests per second sent during every measurement, fan-out and ceiling alike. */
const IDENTIFY_RATE = Number(process.env.BENCH_IDENTIFY_RATE ?? 1_000);
const IDENTIFY_CONNECTIONS = 20;
const TARGET_PER_SEC = 100_000;
const TARGET_SHARE = 0.5;

/** Profiles as identify stores them: stamped email and data, every tenth with an explicit choice. */
async function seedProfiles(sql, projectId, topicId) {
  await sql`
    INSERT INTO profiles (project_id, key, external_id, created_t, email, data, topic_choices)
    SELECT ${projectId}, 'i:' || id, id, 1700000000000,
           jsonb_build_object('t', 1700000000000, 'h', 'seed', 'v', id || '@example.com'),
           jsonb_build_object('plan', jsonb_build_object('t', 1700000000000, 'h', 'seed', 'v', 'pro'),
                              'language', jsonb_build_object('t', 1700000000000, 'h', 'seed', 'v', 'en')),
           CASE WHEN g % ${EXPLICIT_EVERY} = 0
                THEN jsonb_build_object(${String(topicId)}::text, jsonb_build_object('t', 1700000000000, 'h', 'seed', 'v', 'subscribed'))
                ELSE '{}' END
      FROM generate_series(1, ${PROFILES}) AS g, LATERAL (SELECT 'user-' || lpad(g::text, 7, '0') AS id) AS ids`;
  await sql`VACUUM ANALYZE profiles`;
}

/**
 * Identify traffic at a steady rate until stopped, creating and updating profiles of another
 * project (another tenant): both measurements then meet the same load and do the same work,
 * the seeded profiles, and the single statement (which holds every row it updates until it
 * commits) blocks no identify write.
 */
function startIdentifyTraffic(url, authToken) {
  let n = 0;
  const instance = autocannon({
    url: `${url}/api/v2/users/track?auth_token=${authToken}`,
    method: "POST",
    headers: { "content-type": "application/json" },
    connections: IDENTIFY_CONNECTIONS,
    overallRate: IDENTIFY_RATE,
    duration: 3_600,
    requests: [
      {
        setupRequest: (request) => {
          n += 1;
          const id = `traffic-${n % 50_000}`;
          return { ...request, body: JSON.stringify({ id, email: `${id}@example.com`, data: { visits: n } }) };
        },
      },
    ],
  });
  return {
    async stop() {
      instance.stop();
      const { requestsPerSec, p50, p99, non2xx, errors } = summarize(await instance);
      return {
        identifyRequestsPerSec: requestsPerSec,
        identifyP50: p50,
        identifyP99: p99,
        identifyNon2xx: non2xx,
        identifyErrors: errors,
      };
    },
  };
}

/**
 * Every run starts from the same state: the table rewritten compact (repeated full-table
 * updates would otherwise bloat it run after run), a fresh checkpoint.
 */
async function resetTable(sql) {
  await sql`VACUUM (FULL, ANALYZE) profiles`;
  await sql`CHECKPOINT`;
}

/**
 * Where the time goes: every 10 ms, what the work is doing. "UPDATE" is the statement that
 * writes profiles (then what it waits for, CPU when nothing: on a CPU or queued for one);
 * "other statements" the rest of a chunk transaction; "round trip" a chunk transaction open
 * while Postgres waits for the worker's next statement; "between chunks" no chunk open (BEGIN,
 * COMMIT, the worker's own work).
 */
function startWaitSampler(databaseUrl) {
  const sampler = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const counts = {};
  let running = true;
  const done = (async () => {
    while (running) {
      const backends = await sampler`
        SELECT state, coalesce(wait_event_type || ':' || wait_event, 'CPU') AS wait, query
          FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid()
           AND query ~ '(topic_defaults|topic_fanouts|FOR UPDATE|enable_seqscan)'
           AND state IN ('active', 'idle in transaction')`;
      const writing = backends.find((b) => b.state === "active" && b.query.includes("topic_defaults"));
      const category = writing
        ? `UPDATE ${writing.wait}`
        : backends.some((b) => b.state === "active")
          ? "other statements"
          : backends.length > 0
            ? "round trip"
            : "between chunks";
      counts[category] = (counts[category] ?? 0) + 1;
      await sleep(10);
    }
  })();
  return {
    async stop() {
      running = false;
      await done;
      await sampler.end();
      const total = Object.values(counts).reduce((sum, n) => sum + n, 0);
      return Object.fromEntries(
        Object.entries(counts).map(([category, n]) => [category, Math.round((100 * n) / total)]),
      );
    },
  };
}

async function nextDefault(sql, topicId) {
  const [topic] = await sql`SELECT default_status FROM topics WHERE id = ${topicId}`;
  return topic.default_status === "subscribed" ? "unsubscribed" : "subscribed";
}

/**
 * The ceiling: the fan-out's work as one statement (same predicate as libs/db fanOutChunk,
 * without the key range), run through EXPLAIN ANALYZE (timing off) for its WAL and buffers.
 */
async function singleStatement(sql, projectId, topicId) {
  const status = await nextDefault(sql, topicId);
  const topicKey = String(topicId);
  const started = performance.now();
  const plan = await sql.begin(async (tx) => {
    await tx`UPDATE topics SET default_status = ${status}, updated_at = clock_timestamp() WHERE id = ${topicId}`;
    const [row] = await tx.unsafe(
      `EXPLAIN (ANALYZE, BUFFERS, WAL, TIMING OFF, FORMAT JSON)
       UPDATE profiles AS p
          SET topic_defaults = p.topic_defaults || $1::jsonb, updated_at = now()
        WHERE p.project_id = $2
          AND p.created_t IS NOT NULL
          AND NOT coalesce((p.topic_choices -> $3 ->> 't')::bigint >= p.created_t, false)
          AND p.topic_defaults ->> $3 IS DISTINCT FROM $4`,
      [JSON.stringify({ [topicKey]: status }), projectId, topicKey, status],
    );
    return row["QUERY PLAN"][0].Plan;
  });
  const seconds = (performance.now() - started) / 1000;
  const profiles = plan["Actual Rows"] === 0 ? plan.Plans[0]["Actual Rows"] : plan["Actual Rows"];
  return {
    profilesPerSec: profiles / seconds,
    seconds,
    profiles,
    walBytesPerProfile: plan["WAL Bytes"] / profiles,
    buffersWrittenByStatement: plan["Shared Written Blocks"],
  };
}

/** The fan-out as it runs in production: PATCH through the gateway, one worker process applies it. */
async function fanOut(sql, gatewayUrl, apiKey, topicId) {
  const status = await nextDefault(sql, topicId);
  const started = performance.now();
  const reply = await fetch(`${gatewayUrl}/api/v2/topics/${topicId}`, {
    method: "PATCH",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ default_status: status }),
  });
  if (reply.status !== 200) throw new Error(`PATCH answered ${reply.status}: ${await reply.text()}`);
  const patchMs = performance.now() - started;
  let fanout;
  for (;;) {
    [fanout] = await sql`
      SELECT chunks, profiles_updated::integer AS profiles,
             extract(epoch FROM finished_at - started_at)::float8 AS seconds
        FROM topic_fanouts WHERE topic_id = ${topicId} AND finished_at IS NOT NULL`;
    if (fanout !== undefined) break;
    await sleep(25);
  }
  return {
    profilesPerSec: fanout.profiles / fanout.seconds,
    seconds: fanout.seconds,
    profiles: fanout.profiles,
    chunks: fanout.chunks,
    msPerChunk: (1000 * fanout.seconds) / fanout.chunks,
    patchMs,
  };
}

async function profileUpdateCounts(sql) {
  await sql`SELECT pg_stat_clear_snapshot()`;
  const [row] = await sql`
    SELECT n_tup_upd::float8 AS updates, n_tup_hot_upd::float8 AS hot FROM pg_stat_user_tables WHERE relname = 'profiles'`;
  return row;
}

/**
 * Share of profile row updates since `before` that were HOT (rewritten in place on their page,
 * no index entry): what the table's fillfactor buys (migration 006). Counts reach the
 * statistics shortly after each transaction, hence the wait.
 */
async function hotUpdatePercent(sql, before) {
  await sleep(1_000);
  const after = await profileUpdateCounts(sql);
  return (100 * (after.hot - before.hot)) / (after.updates - before.updates);
}

/** One run of a measurement: same starting state, identify traffic and wait sampling around it. */
async function measureOnce(sql, databaseUrl, gateway, authToken, work) {
  await resetTable(sql);
  const traffic = startIdentifyTraffic(gateway.url, authToken);
  await sleep(1_000); // traffic at its rate before the work starts
  const updatesBefore = await profileUpdateCounts(sql);
  const sampler = startWaitSampler(databaseUrl);
  const run = await work();
  run.waits = await sampler.stop();
  Object.assign(run, await traffic.stop());
  run.hotUpdatePercent = await hotUpdatePercent(sql, updatesBefore);
  if (run.profiles !== WITHOUT_CHOICE) throw new Error(`updated ${run.profiles} profiles, expected ${WITHOUT_CHOICE}`);
  return run;
}

/** Median share of each wait over the runs, largest first, as "CPU 60%, IO:DataFileRead 20%". */
function waitSummary(runs) {
  const names = [...new Set(runs.flatMap((run) => Object.keys(run.waits)))];
  return names
    .map((name) => [name, median(runs.map((run) => run.waits[name] ?? 0))])
    .filter(([, share]) => share >= 2)
    .sort(([, a], [, b]) => b - a)
    .map(([name, share]) => `${name} ${share}%`)
    .join(", ");
}

const fmt = (n, digits = 0) =>
  n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function main() {
  const db = await createBenchDatabase("topics");
  const sql = postgres(db.url, { max: 2, onnotice: () => {} });
  const queuePrefix = uniqueName("bench_topics");
  let gateway;
  let worker;
  try {
    const { project, api_key: apiKey } = ctl(db.url, ["project", "create", "--name", "bench"]);
    const { auth_token: authToken } = ctl(db.url, ["project", "create", "--name", "identify traffic"]);
    const topic = ctl(db.url, ["topic", "create", "--project", String(project.id), "--name", "Newsletter"]);
    const seedStarted = performance.now();
    await seedProfiles(sql, project.id, topic.id);
    console.error(`seeded ${fmt(PROFILES)} profiles in ${fmt((performance.now() - seedStarted) / 1000, 1)} s`);

    gateway = await startGateway({ databaseUrl: db.url, queuePrefix });
    worker = startNode("apps/worker/dist/main.js", serviceEnv({ databaseUrl: db.url, queuePrefix }));
    await sleep(1_500);

    const { ceiling, fanout } = await repeatInTurns({
      ceiling: () => measureOnce(sql, db.url, gateway, authToken, () => singleStatement(sql, project.id, topic.id)),
      fanout: () => measureOnce(sql, db.url, gateway, authToken, () => fanOut(sql, gateway.url, apiKey, topic.id)),
    });
    const [{ shared_buffers: sharedBuffers }] = await sql`SELECT current_setting('shared_buffers') AS shared_buffers`;
    const [{ size: tableSize, options: tableOptions }] = await sql`
      SELECT pg_size_pretty(pg_total_relation_size('profiles')) AS size, array_to_string(reloptions, ', ') AS options
        FROM pg_class WHERE relname = 'profiles'`;

    const f = fanout.median;
    const c = ceiling.median;
    const share = f.profilesPerSec / c.profilesPerSec;
    const verdict = (ok) => (ok ? "met" : "**not met**");
    const markdown = `
### Topic default fan-out (medians of ${fanout.runs.length} runs, ${fmt(PROFILES)} profiles, 10% with an explicit choice, 2-core machine)

| Measurement | Profiles/s | Time | Identify traffic meanwhile (${fmt(IDENTIFY_RATE)}/s offered) |
|---|---|---|---|
| Chunked fan-out: PATCH → BullMQ → worker, 5,000 profiles per chunk transaction | **${fmt(f.profilesPerSec)}** | ${fmt(f.seconds, 2)} s for ${fmt(f.profiles)} profiles, ${fmt(f.chunks)} chunks of ${fmt(f.msPerChunk, 1)} ms; PATCH answered in ${fmt(f.patchMs, 1)} ms | ${fmt(f.identifyRequestsPerSec)}/s, p50 ${f.identifyP50} ms, **p99 ${f.identifyP99} ms** |
| Same work as one UPDATE statement (ceiling) | ${fmt(c.profilesPerSec)} | ${fmt(c.seconds, 2)} s; ${fmt(c.walBytesPerProfile)} WAL bytes per profile | ${fmt(c.identifyRequestsPerSec)}/s, p50 ${c.identifyP50} ms, p99 ${c.identifyP99} ms |

- Where the time goes (median share of 10 ms samples; UPDATE CPU = running or queued for a CPU): fan-out ${waitSummary(fanout.runs)}; ceiling ${waitSummary(ceiling.runs)}.
- Fan-out / ceiling: **${fmt(100 * share)}%** (target ≥ ${100 * TARGET_SHARE}%: ${verdict(share >= TARGET_SHARE)}).
- Fan-out rate: target ≥ ${fmt(TARGET_PER_SEC)} profiles/s: ${verdict(f.profilesPerSec >= TARGET_PER_SEC)}.
- Postgres \`shared_buffers\` ${sharedBuffers}; profiles table (${tableOptions}) ${tableSize} after the last run. HOT row updates (rewritten in place, no index entry): fan-out ${fmt(f.hotUpdatePercent)}%, ceiling ${fmt(c.hotUpdatePercent)}%.
- Reading: both are bound by the Postgres backend's CPU (a 2-vCPU machine shared with the gateway, the worker, autocannon and Redis; "CPU" includes waiting for one). What the fan-out adds over the ceiling is per chunk: its round trips and commits ("round trip", "between chunks", "other statements"). The table's fillfactor decides the rest: with too little free room on a page, a row update cannot stay on it, and writes an index entry and a new page.
`;
    writeResults(
      "topics",
      { profiles: PROFILES, identifyRate: IDENTIFY_RATE, fanout, ceiling, sharedBuffers, tableOptions, tableSize },
      markdown,
    );
  } finally {
    await worker?.stop();
    await gateway?.stop();
    await sql.end();
    await db.drop();
    await clearQueue(queuePrefix);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
