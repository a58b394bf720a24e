// What Postgres spends to apply one identify: its backend's CPU time and the WAL it writes, per
// profile row, for new profiles (inserts) and for profiles seen before (updates), on the
// profiles table as migrated, on a candidate layout (16 hash partitions) and on the table as it
// was before migration 018's email lookup, in one database, batch by batch in turns so that
// all meet the same machine.
// These are the per-identify costs that bound the drain however many workers share Postgres
// (docs/scaling.md). CPU is read from /proc (Linux; 10 ms ticks, summed over every batch).
// Usage: npm run build && node bench/write-cost.mjs   (BENCH_RUNS, BENCH_WRITE_BATCHES)
import postgres from "postgres";
import { applyProfileWrites } from "@cm/db";
import { profileWrites } from "../libs/app/dist/profiles/apply-state-operations.js";
import {
  cpuSeconds,
  createBenchDatabase,
  identifyEvent,
  median,
  profilesTableDdl,
  repeat,
  RUNS,
  walBytes,
  writeResults,
} from "./lib.mjs";

const BATCHES = Number(process.env.BENCH_WRITE_BATCHES ?? 100);
const PER_BATCH = 500;

const LAYOUTS = {
  "one table (as migrated)": { partitioned: false },
  "16 hash partitions of (project_id, key) (candidate)": { partitioned: true },
  "one table without the email lookup (as before migration 018)": { partitioned: false, withoutEmailLookup: true },
};

/** One run: every layout in a fresh schema, the same batches applied to each in turn. */
async function measure(databaseUrl) {
  const sql = postgres(databaseUrl, { max: 1, max_pipeline: 1, onnotice: () => {} });
  const [{ pid }] = await sql`SELECT pg_backend_pid() AS pid`;
  const names = Object.keys(LAYOUTS);
  const schemas = names.map((_, i) => `write_cost_${i}`);
  for (const [i, name] of names.entries()) {
    await sql.unsafe(`DROP SCHEMA IF EXISTS ${schemas[i]} CASCADE; CREATE SCHEMA ${schemas[i]}`);
    await sql.unsafe(profilesTableDdl(`${schemas[i]}.profiles`, "public.profiles", LAYOUTS[name]));
    if (LAYOUTS[name].withoutEmailLookup)
      await sql.unsafe(`ALTER TABLE ${schemas[i]}.profiles DROP COLUMN email_lookup`);
  }
  const result = {};
  const total = BATCHES * PER_BATCH;
  // Updates: the same profiles again, a drain's second half (identifyEvent gives every profile two).
  for (const [phase, offset] of [
    ["insert", 0],
    ["update", total],
  ]) {
    const spent = names.map(() => ({ cpu: 0, wal: 0 }));
    for (let b = 0; b < BATCHES; b += 1) {
      const events = Array.from({ length: PER_BATCH }, (_, i) =>
        identifyEvent(1, offset + b * PER_BATCH + i, 2 * total),
      );
      const writes = profileWrites(events);
      const order = b % 2 === 0 ? names.keys() : [...names.keys()].reverse();
      for (const i of order) {
        await sql.unsafe(`SET search_path = ${schemas[i]}, public`);
        const [cpu, wal] = [cpuSeconds(pid), await walBytes(sql)];
        await applyProfileWrites(sql, writes);
        spent[i].wal += (await walBytes(sql)) - wal;
        spent[i].cpu += cpuSeconds(pid) - cpu;
      }
    }
    for (const [i, name] of names.entries())
      result[`${name}: ${phase}`] = { cpuMicros: (spent[i].cpu * 1e6) / total, walBytes: spent[i].wal / total };
  }
  for (const schema of schemas) await sql.unsafe(`DROP SCHEMA ${schema} CASCADE`);
  await sql.end();
  return result;
}

async function main() {
  const db = await createBenchDatabase("write_cost");
  try {
    const { runs } = await repeat("write cost", () => measure(db.url));
    const rows = Object.keys(runs[0]).map((label) => ({
      label,
      cpuMicros: median(runs.map((run) => run[label].cpuMicros)),
      walBytes: median(runs.map((run) => run[label].walBytes)),
    }));
    const markdown = `
### Postgres's cost per identify applied (medians of ${RUNS} runs of ${BATCHES} batches of ${PER_BATCH})

| Layout: rows | Backend CPU per row | WAL per row |
|---|---|---|
${rows.map((r) => `| ${r.label} | ${r.cpuMicros.toFixed(1)} µs | ${Math.round(r.walBytes)} B |`).join("\n")}

The worker's own statement (libs/db \`applyProfileWrites\`) on each layout in turn, from one connection;
inserts are new profiles, updates the same profiles identified again.
`;
    writeResults(
      "write-cost",
      { settings: { runs: RUNS, batches: BATCHES, perBatch: PER_BATCH }, rows, runs },
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
