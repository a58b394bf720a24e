// Tracking spec benchmark (POST /v1/batch, docs/tracking-spec.md): events accepted per second by
// one gateway as batches of Segment messages, as @segment/analytics-node sends them, beside the
// same events as POST /api/v2/batch track operations, in turns, with the gateway's CPU per event.
// Usage: npm run build && node bench/tracking-spec.mjs   (BENCH_RUNS=5 for more runs)
import { loadavg } from "node:os";
import {
  clearQueue,
  cpuSeconds,
  createBenchDatabase,
  ctl,
  load,
  repeatInTurns,
  startGateway,
  uniqueName,
  writeResults,
} from "./lib.mjs";

/** As bench/batch.mjs: a few batches in flight keep the gateway busy, more only hold more memory. */
const CONNECTIONS = 4;
/** Events a request: 1,000 SDK messages are about 450 KB, within Segment's 500 KB batch. */
const BATCH_SIZE = 1_000;
/** Distinct bodies the connections send in turn (each names other users and messages). */
const BATCH_BODIES = 20;
const DURATION_S = Number(process.env.BENCH_DURATION ?? 8);
/** Each kind first takes this much load unmeasured, so no run pays for its JIT compiling. */
const WARMUP_S = 2;

const SPEC = "/v1/batch";
const VERO = "/api/v2/batch";

/** The n-th event: its user, name, properties, id and time, whichever API carries it. */
function event(n) {
  return {
    user: `user-${n % 100_000}`,
    name: ["Viewed Product", "Added to Cart", "Order Completed"][n % 3],
    properties: { sku: `SKU-${n % 997}`, price: (n % 50) + 0.99, currency: "EUR", position: n % 20 },
    messageId: `node-next-${1_795_000_000_000 + n}-${n.toString(16).padStart(8, "0")}-bench`,
    timestamp: new Date(1_795_000_000_000 + n).toISOString(),
  };
}

/** A track message as analytics-node 3 sends it: its context, integrations and metadata. */
const specMessage = (e) => ({
  type: "track",
  userId: e.user,
  event: e.name,
  properties: e.properties,
  context: { library: { name: "@segment/analytics-node", version: "3.1.0" } },
  integrations: {},
  messageId: e.messageId,
  timestamp: e.timestamp,
  _metadata: { jsRuntime: "node" },
});

/** The same event as the users API's batch item: its messageId as extras.message_id, its time as extras.created_at. */
const veroOperation = (e) => ({
  type: "track",
  identity: { id: e.user },
  event_name: e.name,
  data: e.properties,
  extras: { message_id: e.messageId, created_at: e.timestamp },
});

function bodies(path) {
  return Array.from({ length: BATCH_BODIES }, (_, b) => {
    const events = Array.from({ length: BATCH_SIZE }, (_, i) => event(b * BATCH_SIZE + i));
    const body =
      path === SPEC
        ? { batch: events.map(specMessage), sentAt: new Date(1_795_000_100_000).toISOString() }
        : { batch: events.map(veroOperation) };
    return { method: "POST", body: JSON.stringify(body) };
  });
}

const fmt = (n, digits = 0) =>
  n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function main() {
  const db = await createBenchDatabase("tracking_spec");
  const queuePrefix = uniqueName("bench_tracking_spec");
  let gateway;
  try {
    const { auth_token: authToken } = ctl(db.url, ["project", "create", "--name", "bench"]);
    gateway = await startGateway({ databaseUrl: db.url, queuePrefix });
    // The machine is shared: its load says how far the absolute numbers are from a quiet run's.
    const loadBefore = loadavg()[0];
    const requests = { [SPEC]: bodies(SPEC), [VERO]: bodies(VERO) };
    const bytes = (path) => requests[path].reduce((sum, request) => sum + request.body.length, 0) / BATCH_BODIES;
    const measure = (path, duration) => async () => {
      const cpuBefore = cpuSeconds(gateway.child.pid);
      const run = await load({
        url: path === SPEC ? `${gateway.url}${path}` : `${gateway.url}${path}?auth_token=${authToken}`,
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(path === SPEC ? { authorization: `Basic ${Buffer.from(`${authToken}:`).toString("base64")}` } : {}),
        },
        connections: CONNECTIONS,
        duration,
        requests: requests[path],
      });
      const cpu = cpuSeconds(gateway.child.pid) - cpuBefore;
      // No worker runs: what is queued is dropped, so that each run meets the same Redis.
      await clearQueue(queuePrefix);
      const events = run.total * BATCH_SIZE;
      return { ...run, eventsPerSec: run.requestsPerSec * BATCH_SIZE, cpuMicrosPerEvent: (cpu * 1e6) / events };
    };
    await measure(SPEC, WARMUP_S)();
    await measure(VERO, WARMUP_S)();
    const results = await repeatInTurns({ [SPEC]: measure(SPEC, DURATION_S), [VERO]: measure(VERO, DURATION_S) });
    const spec = results[SPEC].median;
    const vero = results[VERO].median;
    const runs = results[SPEC].runs.length;
    // The machine's load drifts between rounds: each round's two runs met the same load.
    const roundRatios = results[SPEC].runs.map(
      (run, round) => run.eventsPerSec / results[VERO].runs[round].eventsPerSec,
    );
    const markdown = `
### Tracking spec \`/v1\` (medians of ${runs} runs, ${DURATION_S} s each, one gateway, 2-core machine)

| Measurement | Result | Baseline in the same run | Target |
|---|---|---|---|
| \`POST /v1/batch\` intake, events accepted/s (${fmt(BATCH_SIZE)} track messages as analytics-node sends them, ${fmt(bytes(SPEC) / 1024)} KiB a request, ${CONNECTIONS} connections) | **${fmt(spec.eventsPerSec)}** (p50 ${spec.p50} ms, p99 ${spec.p99} ms, non-2xx ${spec.non2xx}; gateway CPU ${fmt(spec.cpuMicrosPerEvent, 1)} µs an event) | the same events as \`POST /api/v2/batch\` track operations (${fmt(bytes(VERO) / 1024)} KiB a request): ${fmt(vero.eventsPerSec)}/s (p99 ${vero.p99} ms, non-2xx ${vero.non2xx}; gateway CPU ${fmt(vero.cpuMicrosPerEvent, 1)} µs an event) → ${fmt((100 * spec.eventsPerSec) / vero.eventsPerSec)}% (each round: ${roundRatios.map((ratio) => `${fmt(100 * ratio)}%`).join(", ")}) | none set |

The machine's load average was ${fmt(loadBefore, 1)} when the run began and ${fmt(loadavg()[0], 1)} when it ended (2 cores): compare the two rows of this run, not their numbers with other tables'.
`;
    writeResults("tracking-spec", { results, roundRatios, batchSize: BATCH_SIZE, loadBefore }, markdown);
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
