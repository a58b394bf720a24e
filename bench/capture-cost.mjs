// What the change feed's capture costs Postgres per identify: the backend's CPU time (from /proc,
// Linux; 10 ms ticks) to apply 20,000 identifies of 10,000 new users (each user created, then
// changed) in statements of 500, as a worker applies them (applyStateOperations), with the
// capture's triggers on and off, in turns, each round starting with the other (bench/README.md,
// "Change feed"). Usage: npm run build && node bench/capture-cost.mjs   (BENCH_RUNS for more rounds)
import postgres from "postgres";
import { applyStateOperations } from "../libs/app/dist/profiles/apply-state-operations.js";
import {
  cpuSeconds,
  createBenchDatabase,
  identifyEvent,
  repeatInTurns,
  withChangeFeedOff,
  writeResults,
} from "./lib.mjs";

const IDENTIFIES = 20_000;
const PER_STATEMENT = 500;

async function applyOnce(sql, pid) {
  const [{ id: projectId }] = await sql`INSERT INTO projects (name) VALUES ('capture cost') RETURNING id`;
  const operations = Array.from({ length: IDENTIFIES }, (_, n) => identifyEvent(projectId, n, IDENTIFIES));
  const before = cpuSeconds(pid);
  for (let first = 0; first < IDENTIFIES; first += PER_STATEMENT) {
    await applyStateOperations(sql, operations.slice(first, first + PER_STATEMENT));
  }
  return { microsPerIdentify: ((cpuSeconds(pid) - before) * 1e6) / IDENTIFIES };
}

async function main() {
  const db = await createBenchDatabase("capture_cost");
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    const [{ pid }] = await sql`SELECT pg_backend_pid() AS pid`;
    const results = await repeatInTurns(
      {
        on: () => applyOnce(sql, pid),
        off: () => withChangeFeedOff(db.url, () => applyOnce(sql, pid)),
      },
      { warmUp: true, alternate: true },
    );
    const fmt = (n) => n.toFixed(1);
    const { on, off } = results;
    const markdown = `
### Capture cost (medians of ${on.runs.length} rounds; Postgres backend CPU per identify)

| Feed on | Feed off | Capture | Each round, on / off |
|---|---|---|---|
| **${fmt(on.median.microsPerIdentify)} µs** | ${fmt(off.median.microsPerIdentify)} µs | ${fmt(on.median.microsPerIdentify - off.median.microsPerIdentify)} µs | ${on.runs.map((run, i) => `${fmt(run.microsPerIdentify)} / ${fmt(off.runs[i].microsPerIdentify)}`).join(", ")} |
`;
    writeResults("capture-cost", results, markdown);
  } finally {
    await sql.end();
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
