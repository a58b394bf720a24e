// Webhook fairness (docs/webhooks.md, "What a bad endpoint costs"): the lag of a good endpoint of
// one project, from the commit of each of its changes to its receipt, while another project's
// eight endpoints, each with a backlog, answer 200 after 5 s, or never answer; beside the same
// endpoint alone (the baseline), in turns. One worker process with the webhook defaults
// (WEBHOOK_CONCURRENCY 8, WEBHOOK_POLL_MS 1 s, WEBHOOK_TIMEOUT_MS 15 s); every receiver in this
// process, on 127.0.0.1. A change not delivered by the end of a measurement counts with the lag
// it had then (a lower bound), and is counted as late.
// Usage: npm run build && node bench/webhook-fairness.mjs   (BENCH_RUNS=5 for more runs,
// BENCH_WEBHOOK_SECONDS for the time the good endpoint's changes are written over, 20 s)
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import postgres from "postgres";
import { createWebhookEndpoint } from "@cm/app";
import { applyProfileWrites, createProject, profileKeySecrets } from "@cm/db";
import { profileKeysWith } from "@cm/domain";
import { profileWrites } from "../libs/app/dist/profiles/apply-state-operations.js";
import {
  clearQueue,
  createBenchDatabase,
  median,
  repeatInTurns,
  serviceEnv,
  startNode,
  uniqueName,
  writeResults,
} from "./lib.mjs";

const SECONDS = Number(process.env.BENCH_WEBHOOK_SECONDS ?? 20);
/** The good endpoint's changes: one every half second over SECONDS. */
const CHANGE_EVERY_MS = 500;
/** How long after the last change the measurement waits for the rest. */
const GRACE_MS = 10_000;
const HOSTILE_ENDPOINTS = 8;
/** Changes waiting for each hostile endpoint: 10 batches of WEBHOOK_BATCH_SIZE (100). */
const BACKLOG = 1_000;
const SLOW_ANSWER_MS = 5_000;
const TARGET_P99_MS = 3_000;
const secretKey = randomBytes(32);

const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};

/** A receiver on 127.0.0.1; `answer(response)` answers a request, or leaves it open. */
async function receiver(answer, onChanges = () => {}) {
  const server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => (body += chunk));
    request.on("end", () => {
      onChanges(JSON.parse(body).changes);
      answer(response);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const ANSWERS = {
  slow: (response) => setTimeout(() => response.writeHead(200).end(), SLOW_ANSWER_MS),
  silent: () => {},
};

/** New users' identifies of a project, as a worker applies them (one profile.created change each). */
async function writeChanges(sql, projectId, ids) {
  const keyOf = profileKeysWith(await profileKeySecrets(sql, [projectId]));
  const t = Date.now();
  const identifies = ids.map((id) => ({ projectId, key: keyOf(projectId, id), id, t, updateOnly: false }));
  for (let first = 0; first < identifies.length; first += 500)
    await applyProfileWrites(sql, profileWrites(identifies.slice(first, first + 500)));
}

/**
 * One measurement: a worker of its own; with `hostile`, a project whose eight endpoints have a
 * backlog and answer as it says, holding what they can before the good endpoint's changes start.
 */
async function measure(databaseUrl, sql, hostile) {
  const closing = [];
  const projects = [];
  const queuePrefix = uniqueName("bench_webhooks");
  let worker;
  /** Requests the hostile endpoints were sent. */
  let hostileTries = 0;
  try {
    if (hostile !== undefined) {
      const project = await createProject(sql, "hostile");
      projects.push(project.id);
      for (let e = 0; e < HOSTILE_ENDPOINTS; e += 1) {
        const r = await receiver((response) => {
          hostileTries += 1;
          ANSWERS[hostile](response);
        });
        closing.push(r);
        await createWebhookEndpoint({ sql, secretKey }, project.id, { url: r.url, types: null });
      }
      await writeChanges(
        sql,
        project.id,
        Array.from({ length: BACKLOG }, (_, n) => `backlog-${n}`),
      );
    }
    const project = await createProject(sql, "good");
    projects.push(project.id);
    const received = new Map();
    const good = await receiver(
      (response) => response.writeHead(200).end(),
      (changes) => {
        const at = performance.now();
        for (const change of changes) if (!received.has(change.user_id)) received.set(change.user_id, at);
      },
    );
    closing.push(good);
    await createWebhookEndpoint({ sql, secretKey }, project.id, { url: good.url, types: null });
    worker = startNode(
      "apps/worker/dist/main.js",
      serviceEnv({
        databaseUrl,
        queuePrefix,
        extra: { WEBHOOK_SECRET_KEY: secretKey.toString("base64"), WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true" },
      }),
    );
    // Started: the good endpoint got a first change, or the hostile ones took the slots they can.
    await writeChanges(sql, project.id, ["warm-up"]);
    const deadline = Date.now() + 60_000;
    while (!received.has("warm-up") && hostileTries < HOSTILE_ENDPOINTS / 2) {
      if (Date.now() > deadline) throw new Error("the worker delivered nothing within 60 s");
      await sleep(50);
    }
    const committed = new Map();
    for (let n = 0; n < (SECONDS * 1000) / CHANGE_EVERY_MS; n += 1) {
      const started = performance.now();
      await writeChanges(sql, project.id, [`good-${n}`]);
      committed.set(`good-${n}`, performance.now());
      await sleep(Math.max(0, CHANGE_EVERY_MS - (performance.now() - started)));
    }
    const waitUntil = performance.now() + GRACE_MS;
    while ([...committed.keys()].some((id) => !received.has(id)) && performance.now() < waitUntil) await sleep(50);
    const end = performance.now();
    const lags = [...committed].map(([id, at]) => (received.get(id) ?? end) - at);
    return {
      changes: lags.length,
      late: [...committed.keys()].filter((id) => !received.has(id)).length,
      p50: percentile(lags, 50),
      p99: percentile(lags, 99),
      max: Math.max(...lags),
    };
  } finally {
    // Closed first: a worker waits for its deliveries in flight before it stops.
    await Promise.all(closing.map((r) => r.close()));
    await worker?.stop();
    if (projects.length > 0)
      await sql`UPDATE webhook_endpoints SET state = 'revoked' WHERE project_id IN ${sql(projects)}`;
    await clearQueue(queuePrefix);
  }
}

async function main() {
  const db = await createBenchDatabase("webhooks");
  const sql = postgres(db.url, { max: 2, onnotice: () => {} });
  try {
    const results = await repeatInTurns(
      {
        alone: () => measure(db.url, sql, undefined),
        slow: () => measure(db.url, sql, "slow"),
        silent: () => measure(db.url, sql, "silent"),
      },
      { rotate: true },
    );
    const fmt = (ms) => (ms / 1000).toFixed(2);
    const row = (label, { median: m, runs }) =>
      `| ${label} | **p99 ${fmt(m.p99)} s** (p50 ${fmt(m.p50)} s, max ${fmt(median(runs.map((r) => r.max)))} s) | ${m.late} of ${m.changes} | ${label.startsWith("Alone") ? "baseline" : `p99 < ${TARGET_P99_MS / 1000} s: ${m.p99 < TARGET_P99_MS ? "met" : "not met"}`} |`;
    const markdown = `
### Webhook fairness (medians of ${results.alone.runs.length} runs, one worker, 2-core machine)

Lag of a good endpoint of one project, from each change's commit to its receipt (a change every ${CHANGE_EVERY_MS} ms for ${SECONDS} s), while another project's ${HOSTILE_ENDPOINTS} endpoints, each ${BACKLOG.toLocaleString("en-US")} changes behind, misbehave: [docs/webhooks.md](docs/webhooks.md#what-a-bad-endpoint-costs).

| The other project's endpoints | Good endpoint's lag | Changes not delivered ${GRACE_MS / 1000} s after the last | Target |
|---|---|---|---|
${row("Alone (none)", results.alone)}
${row(`Answer 200 after ${SLOW_ANSWER_MS / 1000} s`, results.slow)}
${row("Never answer", results.silent)}
`;
    writeResults("webhook-fairness", results, markdown);
  } finally {
    await sql.end();
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
