// Horizontal scaling on one machine: drain rate with 1 and 2 worker processes, and intake rate
// with 1 and 2 gateway processes, against the same queue, so the factor is measured.
// Usage: npm run build && node bench/scale.mjs
import postgres from "postgres";
import {
  clearQueue,
  createBenchDatabase,
  ctl,
  drainOnce,
  intake,
  repeat,
  startGateway,
  uniqueName,
  writeResults,
} from "./lib.mjs";

const CONNECTIONS = 100;
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const DRAIN_EVENTS = Number(process.env.BENCH_DRAIN_EVENTS ?? 200_000);

async function intakeWith(gateways, databaseUrl, authToken) {
  const queuePrefix = uniqueName("bench_scale");
  const running = [];
  // One project sends everything here: its rate limit (50,000/s by default) would cap the curve.
  const extra = { RATE_LIMIT_PER_SECOND: "10000000", RATE_LIMIT_BURST: "10000000" };
  for (let i = 0; i < gateways; i += 1) running.push(await startGateway({ databaseUrl, queuePrefix, extra }));
  const path = `/api/v2/users/track?auth_token=${authToken}`;
  const result = await repeat(`intake with ${gateways} gateway(s)`, async () => {
    const runs = await Promise.all(running.map((g) => intake(g.url, path, CONNECTIONS / gateways, DURATION_S)));
    await clearQueue(queuePrefix);
    return {
      requestsPerSec: runs.reduce((sum, run) => sum + run.requestsPerSec, 0),
      p99: Math.max(...runs.map((run) => run.p99)),
      non2xx: runs.reduce((sum, run) => sum + run.non2xx, 0),
    };
  });
  await Promise.all(running.map((g) => g.stop()));
  await clearQueue(queuePrefix);
  return result;
}

async function main() {
  const db = await createBenchDatabase("scale");
  const sql = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    const { auth_token: authToken } = ctl(db.url, ["project", "create", "--name", "bench"]);
    const project = async () => (await sql`INSERT INTO projects (name) VALUES ('drain') RETURNING id`)[0].id;
    const drain1 = await repeat("drain, 1 worker", async () =>
      drainOnce(db.url, await project(), DRAIN_EVENTS, 500, { workers: 1 }),
    );
    const drain2 = await repeat("drain, 2 workers", async () =>
      drainOnce(db.url, await project(), DRAIN_EVENTS, 500, { workers: 2 }),
    );
    const intake1 = await intakeWith(1, db.url, authToken);
    const intake2 = await intakeWith(2, db.url, authToken);

    const fmt = (n, digits = 0) =>
      n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
    const markdown = `
### Scaling on one 2-core machine (medians of ${drain1.runs.length} runs)

| Processes | 1 | 2 | Factor |
|---|---|---|---|
| Workers: identifies applied/s | ${fmt(drain1.median.eventsPerSec)} | ${fmt(drain2.median.eventsPerSec)} | ${fmt(drain2.median.eventsPerSec / drain1.median.eventsPerSec, 2)}× |
| Gateways: accepted identifies/s (${CONNECTIONS} connections in all) | ${fmt(intake1.median.requestsPerSec)} (p99 ${intake1.median.p99} ms) | ${fmt(intake2.median.requestsPerSec)} (p99 ${intake2.median.p99} ms) | ${fmt(intake2.median.requestsPerSec / intake1.median.requestsPerSec, 2)}× |

Postgres, Redis, the load generator and the services share the same two cores, so these factors
are a floor: on separate machines each added process brings its own CPU.
`;
    writeResults("scale", { drain1, drain2, intake1, intake2 }, markdown);
  } finally {
    await sql.end();
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
