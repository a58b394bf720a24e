// What one read of the change feed holds (issue 44, docs/changes.md "What one read holds"): a
// gateway's peak resident memory, and each read's time and size, while readers page through the
// changes of profiles grown to their bounds (migration 027), all at once; and the issue's case, a
// profile grown by 46 identifies of 250 KB, read `limit=100` from before them.
// Usage: npm run build && node bench/feed-bytes.mjs   (BENCH_FEED_CASES=issue44,bounds, BENCH_FEED_PROFILES, BENCH_FEED_READERS)
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { applyProfileWrites, connect, profileKeySecrets } from "@cm/db";
import { profileKeysWith } from "@cm/domain";
import { profileWrites } from "../libs/app/dist/profiles/apply-state-operations.js";
import { createBenchDatabase, ctl, startGateway, uniqueName, writeResults } from "./lib.mjs";

/** Profiles written to their bounds, eight writes each. */
const PROFILES = Number(process.env.BENCH_FEED_PROFILES ?? 8);
/** Readers at once: a gateway's pool holds 10 connections. */
const READERS = Number(process.env.BENCH_FEED_READERS ?? 10);
const VALUE = 250_000;
/** As k8s/base runs the gateway. */
const NODE_OPTIONS = "--max-old-space-size=320";

const mib = (bytes) => bytes / 1024 / 1024;
const memory = (pid, field) =>
  Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 1024;

/** Applies each write in a statement of its own, as a job of one; counts those the bounds refuse. */
async function apply(sql, writes) {
  let refused = 0;
  for (const write of writes) {
    try {
      await applyProfileWrites(sql, profileWrites([write]));
    } catch (error) {
      if (error?.name !== "ProfileTooLarge") throw error;
      refused += 1;
    }
  }
  return refused;
}

/** Until the feed can read everything written so far. */
async function settled(sql) {
  const [{ last }] = await sql`SELECT pg_current_xact_id()::text AS last`;
  while ((await sql`SELECT pg_snapshot_xmin(pg_current_snapshot()) > ${last}::xid8 AS passed`)[0].passed !== true)
    await sleep(50);
}

/** Pages through the whole feed from its start; each read's status, time and body size. */
async function pageThrough(url, apiKey, limit) {
  const reads = [];
  let after = null;
  for (;;) {
    const started = performance.now();
    const response = await fetch(
      `${url}/api/v2/changes?${new URLSearchParams({ limit: String(limit), ...(after ? { after } : {}) })}`,
      {
        headers: { authorization: `Bearer ${apiKey}` },
      },
    );
    const text = await response.text();
    reads.push({ status: response.status, ms: performance.now() - started, bytes: text.length });
    if (response.status !== 200) return reads;
    const page = JSON.parse(text);
    if (page.changes.length === 0) return reads;
    after = page.next;
  }
}

async function scenario(label, fill, limit, readers) {
  const db = await createBenchDatabase("feed_bytes");
  const { project, api_key: apiKey } = ctl(db.url, ["project", "create", "--name", "bench"]);
  const sql = connect(db.url, { max: 2 });
  const gateway = await startGateway({
    databaseUrl: db.url,
    queuePrefix: uniqueName("bench_feed"),
    extra: { NODE_OPTIONS },
  });
  try {
    const keyOf = profileKeysWith(await profileKeySecrets(sql, [project.id]));
    const refused = await fill(sql, project.id, keyOf);
    await settled(sql);
    const [{ rows, rendered }] = await sql`
      SELECT count(*)::integer AS rows, sum(octet_length(json_build_object('before', before, 'after', after)::text))::bigint AS rendered
        FROM changes WHERE project_id = ${project.id}`;
    const pid = gateway.child.pid;
    const before = memory(pid, "VmRSS");
    const runs = await Promise.all(Array.from({ length: readers }, () => pageThrough(gateway.url, apiKey, limit)));
    const reads = runs.flat();
    const result = {
      label,
      limit,
      readers,
      refused,
      rows,
      renderedMiB: mib(Number(rendered)),
      reads: reads.length,
      statuses: [...new Set(reads.map((read) => read.status))],
      pagesPerReader: runs[0].length,
      slowestMs: Math.max(...reads.map((read) => read.ms)),
      largestBodyMiB: mib(Math.max(...reads.map((read) => read.bytes))),
      rssBeforeMiB: before,
      peakRssMiB: memory(pid, "VmHWM"),
    };
    console.error(JSON.stringify(result));
    return result;
  } finally {
    await gateway.stop();
    await sql.end();
    await db.drop();
  }
}

/** Each profile: data grown to 1 MB in four writes of 250 KB, then each value replaced; 100 tags of 255 characters after each. */
async function atTheBounds(sql, projectId, keyOf) {
  const writes = [];
  for (let round = 0; round < 8; round += 1)
    for (let p = 0; p < PROFILES; p += 1) {
      const id = `bounded-${p}`;
      const on = { projectId, key: keyOf(projectId, id), id, t: 1000 + round };
      const data = { [`k${round % 4}`]: String.fromCharCode(97 + round).repeat(VALUE) };
      const add = Array.from({ length: 100 }, (_, i) => `${round}-${i}-`.padEnd(255, "t"));
      writes.push({ ...on, updateOnly: false, data }, { ...on, op: "tags", add, remove: [] });
    }
  return apply(sql, writes);
}

/** Issue 44: one profile grown by 46 identifies of 250 KB, each a key of its own. */
async function issue44(sql, projectId, keyOf) {
  const writes = Array.from({ length: 46 }, (_, n) => ({
    projectId,
    key: keyOf(projectId, "grown"),
    id: "grown",
    t: 1000 + n,
    updateOnly: false,
    data: { [`k${n}`]: "x".repeat(VALUE) },
  }));
  return apply(sql, writes);
}

async function main() {
  const cases = {
    issue44: () => scenario("issue 44: 46 identifies of 250 KB, one reader, limit=100", issue44, 100, 1),
    bounds: () =>
      scenario(
        `${PROFILES} profiles at their bounds, ${READERS} readers at once, limit=1000`,
        atTheBounds,
        1000,
        READERS,
      ),
  };
  const results = [];
  for (const name of (process.env.BENCH_FEED_CASES ?? "issue44,bounds").split(",")) results.push(await cases[name]());
  const row = (r) =>
    `| ${r.label} | ${r.rows} rows, ${r.renderedMiB.toFixed(1)} MiB rendered (${r.refused} writes refused) | ${r.statuses.join(", ")}; ${r.pagesPerReader} pages a reader, slowest read ${Math.round(r.slowestMs)} ms, largest body ${r.largestBodyMiB.toFixed(1)} MiB | ${Math.round(r.rssBeforeMiB)} → peak ${Math.round(r.peakRssMiB)} MiB |`;
  const markdown = `
### What one read of the change feed holds (issue 44; one gateway, \`${NODE_OPTIONS}\`, 2-core machine)

| Case | Feed | Reads | Gateway RSS |
|---|---|---|---|
${results.map(row).join("\n")}
`;
  writeResults("feed-bytes", results, markdown);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
