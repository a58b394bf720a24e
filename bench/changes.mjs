// Change feed benchmarks (docs/changes.md): the bytes a change takes in Postgres, the read's
// latency at 1,000 changes a page through the gateway, and freshness, from the commit of a change
// to a waiting reader's answer holding it, while profile writes go on. What capture costs the
// drains is measured in identify.mjs and events.mjs (feed on beside off).
// Usage: npm run build && node bench/changes.mjs   (BENCH_RUNS=5 for more runs)
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import postgres from "postgres";
import { applyProfileWrites, profileKeySecrets } from "@cm/db";
import { profileKeysWith } from "@cm/domain";
import { profileWrites } from "../libs/app/dist/profiles/apply-state-operations.js";
import { createBenchDatabase, ctl, median, repeat, startGateway, uniqueName, writeResults } from "./lib.mjs";

/** Profiles created (one profile.created change each) before the reads. */
const PROFILES = Number(process.env.BENCH_CHANGE_PROFILES ?? 200_000);
const PAGE = 1_000;
/** Profile writes a statement while freshness is measured, as a worker's job of identifies. */
const WRITES_PER_STATEMENT = 500;
const FRESHNESS_SAMPLES = 200;

const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
};

/** `count` identifies of new users from `first` on, as a job applies them: email and two data keys. */
function identifies(projectId, keyOf, first, count, t, extra = () => ({})) {
  return Array.from({ length: count }, (_, i) => {
    const id = `u-${first + i}`;
    return {
      projectId,
      key: keyOf(projectId, id),
      id,
      email: `${id}@example.com`,
      data: { plan: "pro", seats: 3, ...extra(first + i) },
      t,
      updateOnly: false,
    };
  });
}

async function fill(sql, projectId, keyOf) {
  for (let first = 0; first < PROFILES; first += WRITES_PER_STATEMENT) {
    await applyProfileWrites(sql, profileWrites(identifies(projectId, keyOf, first, WRITES_PER_STATEMENT, Date.now())));
  }
  await sql`VACUUM ANALYZE changes`;
  // Readable once every transaction older than the last write has ended, anywhere on the server.
  const [{ last }] = await sql`SELECT pg_current_xact_id()::text AS last`;
  while ((await sql`SELECT pg_snapshot_xmin(pg_current_snapshot()) > ${last}::xid8 AS passed`)[0].passed !== true) {
    await sleep(50);
  }
  const [size] = await sql`
    SELECT count(*)::bigint AS rows, pg_total_relation_size('changes') AS total, pg_indexes_size('changes') AS indexes
      FROM changes`;
  return {
    rows: Number(size.rows),
    bytesPerChange: size.total / size.rows,
    indexBytesPerChange: size.indexes / size.rows,
  };
}

const read = async (url, apiKey, query) => {
  const response = await fetch(`${url}/api/v2/changes?${new URLSearchParams(query)}`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  if (response.status !== 200) throw new Error(`feed read answered ${response.status}`);
  return response.json();
};

/** Every page's cursor, then one read of a full page from each, timed. */
async function readLatency(url, apiKey) {
  const cursors = [];
  let after = null;
  for (;;) {
    const page = await read(url, apiKey, { limit: String(PAGE), ...(after === null ? {} : { after }) });
    if (page.changes.length < PAGE) break;
    cursors.push(after);
    after = page.next;
  }
  const ms = [];
  for (const cursor of cursors) {
    const started = performance.now();
    const page = await read(url, apiKey, { limit: String(PAGE), ...(cursor === null ? {} : { after: cursor }) });
    ms.push(performance.now() - started);
    if (page.changes.length !== PAGE) throw new Error("a page not full");
  }
  return { pages: ms.length, p50: percentile(ms, 50), p99: percentile(ms, 99) };
}

/**
 * A writer applies statements of WRITES_PER_STATEMENT profile writes back to back, each holding
 * one marked profile; a reader long-polls from where it is. Freshness: from the writer's commit of
 * a marked change to the reader's answer that holds it.
 */
async function freshness(databaseUrl, url, apiKey, projectId, keyOf, run) {
  const writer = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const committed = new Map();
  const seen = new Map();
  // The reader starts where the feed ends.
  let after = null;
  for (;;) {
    const page = await read(url, apiKey, { limit: String(PAGE), ...(after === null ? {} : { after }) });
    after = page.next;
    if (page.changes.length === 0) break;
  }
  let writing = true;
  const reader = (async () => {
    while (writing || seen.size < committed.size) {
      const page = await read(url, apiKey, { after, limit: String(PAGE), wait: "5", types: "profile.created" });
      const at = performance.now();
      for (const change of page.changes) {
        const marker = change.change.data?.marker;
        if (marker !== undefined && !seen.has(marker)) seen.set(marker, at);
      }
      after = page.next;
    }
  })();
  // New users in each run, so that each write is a profile.created.
  const base = PROFILES + (run + 1) * FRESHNESS_SAMPLES * WRITES_PER_STATEMENT;
  for (let n = 0; n < FRESHNESS_SAMPLES; n += 1) {
    const first = base + n * WRITES_PER_STATEMENT;
    const writes = identifies(projectId, keyOf, first, WRITES_PER_STATEMENT, Date.now(), (i) =>
      i === first ? { marker: n } : {},
    );
    await applyProfileWrites(writer, profileWrites(writes));
    committed.set(n, performance.now());
    await sleep(20);
  }
  writing = false;
  await reader;
  await writer.end();
  const ms = [...committed].map(([marker, at]) => seen.get(marker) - at);
  return { samples: ms.length, p50: percentile(ms, 50), p99: percentile(ms, 99), max: Math.max(...ms) };
}

async function main() {
  const db = await createBenchDatabase("changes");
  const { project, api_key: apiKey } = ctl(db.url, ["project", "create", "--name", "bench"]);
  const sql = postgres(db.url, { max: 2, onnotice: () => {} });
  const gateway = await startGateway({ databaseUrl: db.url, queuePrefix: uniqueName("bench_changes") });
  try {
    const keyOf = profileKeysWith(await profileKeySecrets(sql, [project.id]));
    const size = await fill(sql, project.id, keyOf);
    const reads = await repeat("feed read, 1,000 changes a page", () => readLatency(gateway.url, apiKey));
    // One round unmeasured first, so that no measured round holds the gateway's first long-polls.
    console.error(
      `  freshness warm-up (not measured): ${JSON.stringify(await freshness(db.url, gateway.url, apiKey, project.id, keyOf, -1))}`,
    );
    const fresh = await repeat("freshness, commit to a waiting reader", (run) =>
      freshness(db.url, gateway.url, apiKey, project.id, keyOf, run),
    );
    const fmt = (n, digits = 0) =>
      n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
    const markdown = `
### Change feed (medians of ${reads.runs.length} runs, one gateway, 2-core machine)

| Measurement | Result | Target |
|---|---|---|
| Storage per change (\`changes\`: heap, TOAST, indexes; ${fmt(size.rows)} \`profile.created\` changes of an email and two data keys, each stored as the new profile's row (a changed profile's holds its row before too): [docs/changes.md](docs/changes.md#how-it-works-and-what-it-costs)) | **${fmt(size.bytesPerChange)} bytes** (indexes ${fmt(size.indexBytesPerChange)}) | none set |
| Feed read, \`GET /api/v2/changes?limit=1000\` from each page's cursor (${fmt(reads.median.pages)} pages, one reader) | **p99 ${fmt(reads.median.p99, 1)} ms** (p50 ${fmt(reads.median.p50, 1)} ms) | none set |
| Freshness: from a change's commit to a waiting reader's answer (\`wait=5\`), while profiles are written ${WRITES_PER_STATEMENT} a statement back to back (${fmt(fresh.median.samples)} changes) | **p99 ${fmt(fresh.median.p99)} ms** (p50 ${fmt(fresh.median.p50)} ms, max ${fmt(median(fresh.runs.map((run) => run.max)))} ms) | p99 < 1 s: ${fresh.median.p99 < 1000 ? "met" : "not met"} |
`;
    writeResults("changes", { size, reads, fresh }, markdown);
  } finally {
    await gateway.stop();
    await sql.end();
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
