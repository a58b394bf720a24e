// Batch benchmark (POST /api/v2/batch, docs/bulk.md): identifies accepted per second by one
// gateway as 1,000-operation batches, beside single identify calls on the same gateway, in turns.
// Usage: npm run build && node bench/batch.mjs   (BENCH_RUNS=5 for more runs)
import {
  batchIntake,
  batchRequests,
  clearQueue,
  createBenchDatabase,
  ctl,
  intake,
  repeatInTurns,
  startGateway,
  uniqueName,
  writeResults,
} from "./lib.mjs";

const SINGLE_CONNECTIONS = 100;
/**
 * A batch is a few milliseconds of one core's work: a few in flight keep the gateway busy, and
 * more only hold more memory (each holds about half a megabyte of its body budget, and the
 * garbage collector's time grows with what is held: 10 connections gave less than 3 did).
 */
const BATCH_CONNECTIONS = 4;
const BATCH_SIZE = 1_000;
/** Distinct batch bodies the connections send in turn (each names other users). */
const BATCH_BODIES = 20;
const DURATION_S = Number(process.env.BENCH_DURATION ?? 8);
/** Each kind first takes this much load unmeasured, so no run pays for its JIT compiling. */
const WARMUP_S = 2;

const requests = batchRequests(BATCH_SIZE, BATCH_BODIES);

const fmt = (n, digits = 0) =>
  n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function main() {
  const db = await createBenchDatabase("batch");
  const queuePrefix = uniqueName("bench_batch");
  let gateway;
  try {
    const { auth_token: authToken } = ctl(db.url, ["project", "create", "--name", "bench"]);
    gateway = await startGateway({ databaseUrl: db.url, queuePrefix });
    const measure = (kind, duration) => async () => {
      const run =
        kind === "single"
          ? await intake(gateway.url, `/api/v2/users/track?auth_token=${authToken}`, SINGLE_CONNECTIONS, duration)
          : await batchIntake(gateway.url, authToken, requests, BATCH_CONNECTIONS, duration);
      // No worker runs: what is queued is dropped, so that each run meets the same Redis.
      await clearQueue(queuePrefix);
      const perRequest = kind === "single" ? 1 : BATCH_SIZE;
      return { ...run, operationsPerSec: run.requestsPerSec * perRequest };
    };
    await measure("single", WARMUP_S)();
    await measure("batch", WARMUP_S)();
    const results = await repeatInTurns({
      "single identify calls": measure("single", DURATION_S),
      [`batches of ${BATCH_SIZE} identifies`]: measure("batch", DURATION_S),
    });
    const single = results["single identify calls"].median;
    const batched = results[`batches of ${BATCH_SIZE} identifies`].median;
    const runs = results["single identify calls"].runs.length;
    // The machine's load drifts between rounds: each round's two runs met the same load.
    const roundRatios = results[`batches of ${BATCH_SIZE} identifies`].runs.map(
      (run, round) => run.operationsPerSec / results["single identify calls"].runs[round].operationsPerSec,
    );
    const markdown = `
### Batch (medians of ${runs} runs, ${DURATION_S} s each, one gateway, 2-core machine)

| Measurement | Result | Baseline in the same run | Target |
|---|---|---|---|
| Batch intake, identifies accepted/s (\`POST /batch\`, ${fmt(BATCH_SIZE)} identifies a request, ${BATCH_CONNECTIONS} connections) | **${fmt(batched.operationsPerSec)}** (${fmt(batched.requestsPerSec, 1)} batches/s, p50 ${batched.p50} ms, p99 ${batched.p99} ms, non-2xx ${batched.non2xx}) | single identify calls (${SINGLE_CONNECTIONS} connections): ${fmt(single.operationsPerSec)}/s (p99 ${single.p99} ms, non-2xx ${single.non2xx}) → ${fmt(batched.operationsPerSec / single.operationsPerSec, 1)}× (each round: ${roundRatios.map((ratio) => `${fmt(ratio, 1)}×`).join(", ")}) | ≥ 10× single calls |
`;
    writeResults("batch", { results, roundRatios, batchSize: BATCH_SIZE }, markdown);
  } finally {
    await gateway?.stop();
    await clearQueue(queuePrefix);
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
