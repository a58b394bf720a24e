// Identify benchmarks: gateway intake (accepted requests/s, p99) and worker drain (identifies
// applied to Postgres per second by one worker process), each beside baselines measured in
// the same run. Usage: npm run build && node bench/identify.mjs   (BENCH_RUNS=5 for more runs)
import { setTimeout as sleep } from "node:timers/promises";
import postgres from "postgres";
import {
  clearQueue,
  createBenchDatabase,
  ctl,
  drainOnce,
  freePort,
  intake,
  intakeRequests,
  mixedOperation,
  repeat,
  repeatInTurns,
  startGateway,
  startNode,
  uniqueName,
  withChangeFeedOff,
  writeResults,
} from "./lib.mjs";

const CONNECTIONS = 100;
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const DRAIN_EVENTS = Number(process.env.BENCH_DRAIN_EVENTS ?? 200_000);
const NAIVE_DRAIN_EVENTS = Number(process.env.BENCH_NAIVE_DRAIN_EVENTS ?? 10_000);
const GATEWAY_BATCH = 500;
/** Each server first takes this much load unmeasured, so no run pays for its JIT compiling. */
const WARMUP_S = 3;

/**
 * The servers take turns after a warm-up each: the bare node:http ceiling, the naive gateway,
 * ours with the credential in the query string (api.md's transport), and ours again with the
 * credential in the JSON body instead (as RudderStack, n8n and Vero's gems send it).
 */
async function measureIntake(databaseUrl, authToken) {
  const path = `/api/v2/users/track?auth_token=${authToken}`;
  const bodyCredentialRequests = intakeRequests({ auth_token: authToken });
  const servers = {};
  try {
    const barePort = await freePort();
    servers.bare = {
      ...startNode("bench/servers/bare-http.mjs", { PATH: process.env.PATH, PORT: String(barePort) }),
      url: `http://127.0.0.1:${barePort}`,
    };
    await sleep(300);
    for (const [name, batchSize] of [
      ["naive", 1],
      ["gateway", GATEWAY_BATCH],
    ]) {
      const queuePrefix = uniqueName(`bench_${name}`);
      servers[name] = {
        ...(await startGateway({
          databaseUrl,
          queuePrefix,
          extra: { PROFILE_OPERATIONS_BATCH_SIZE: String(batchSize) },
        })),
        queuePrefix,
      };
    }
    const measure =
      (server, duration, credentialInBody = false) =>
      async () => {
        const run = credentialInBody
          ? await intake(server.url, "/api/v2/users/track", CONNECTIONS, duration, bodyCredentialRequests)
          : await intake(server.url, path, CONNECTIONS, duration);
        if (server.queuePrefix) await clearQueue(server.queuePrefix);
        return run;
      };
    for (const server of Object.values(servers)) await measure(server, WARMUP_S)();
    await measure(servers.gateway, WARMUP_S, true)();
    const results = await repeatInTurns({
      "bare node:http": measure(servers.bare, DURATION_S),
      "naive gateway (one queue.add per request)": measure(servers.naive, DURATION_S),
      "gateway (micro-batched)": measure(servers.gateway, DURATION_S),
      "gateway, credential in the body": measure(servers.gateway, DURATION_S, true),
    });
    return {
      bare: results["bare node:http"],
      naive: results["naive gateway (one queue.add per request)"],
      gateway: results["gateway (micro-batched)"],
      gatewayBodyCredential: results["gateway, credential in the body"],
    };
  } finally {
    for (const server of Object.values(servers)) {
      await server.stop();
      if (server.queuePrefix) await clearQueue(server.queuePrefix);
    }
  }
}

async function measureDrain(databaseUrl) {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const project = async (name) => (await sql`INSERT INTO projects (name) VALUES (${name}) RETURNING id`)[0].id;
  // Identifies alone, the same without the change feed's capture, and the mix of every operation
  // take turns, so that all meet the same load; each drains once unmeasured first, and each round
  // starts with another, so that none is always the first after the intake's servers.
  const { batched, feedOff, mixed } = await repeatInTurns(
    {
      batched: async () => drainOnce(databaseUrl, await project("drain"), DRAIN_EVENTS, GATEWAY_BATCH),
      feedOff: async () =>
        withChangeFeedOff(databaseUrl, async () =>
          drainOnce(databaseUrl, await project("feed off"), DRAIN_EVENTS, GATEWAY_BATCH),
        ),
      mixed: async () =>
        drainOnce(databaseUrl, await project("mixed"), DRAIN_EVENTS, GATEWAY_BATCH, { operationAt: mixedOperation }),
    },
    { warmUp: true, rotate: true },
  );
  const naive = await repeat("naive worker drain (one job, one upsert per identify)", async () =>
    drainOnce(databaseUrl, await project("naive"), NAIVE_DRAIN_EVENTS, 1),
  );
  await sql.end();
  return { batched, feedOff, mixed, naive };
}

const fmt = (n, digits = 0) =>
  n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function main() {
  const db = await createBenchDatabase("identify");
  try {
    const { auth_token: authToken } = ctl(db.url, ["project", "create", "--name", "bench"]);
    const intakeResults = await measureIntake(db.url, authToken);
    const drain = await measureDrain(db.url);

    const gw = intakeResults.gateway.median;
    const naive = intakeResults.naive.median;
    const bare = intakeResults.bare.median;
    const inBody = intakeResults.gatewayBodyCredential.median;
    const ratio = (a, b) => `${fmt(a / b, 2)}×`;
    const markdown = `
### Identify (medians of ${intakeResults.gateway.runs.length} runs, ${CONNECTIONS} connections, ${DURATION_S} s each, 2-core machine)

| Measurement | Result | Baseline(s) in the same run | Target |
|---|---|---|---|
| Gateway intake, accepted identifies/s | **${fmt(gw.requestsPerSec)}** (p50 ${gw.p50} ms, p99 ${gw.p99} ms, non-2xx ${gw.non2xx}) | naive one-\`queue.add\`-per-request: ${fmt(naive.requestsPerSec)} (p99 ${naive.p99} ms) → ${ratio(gw.requestsPerSec, naive.requestsPerSec)}; bare \`node:http\`: ${fmt(bare.requestsPerSec)} (p99 ${bare.p99} ms) → ${fmt((100 * gw.requestsPerSec) / bare.requestsPerSec)}% | ≥ 2× naive, ≥ 40% of bare, p99 ≤ 50 ms |
| Same, credential in the JSON body (\`auth_token\` field, as RudderStack, n8n and Vero's gems send it) | **${fmt(inBody.requestsPerSec)}** (p50 ${inBody.p50} ms, p99 ${inBody.p99} ms, non-2xx ${inBody.non2xx}) | naive (query credential): ${ratio(inBody.requestsPerSec, naive.requestsPerSec)}; bare: ${fmt((100 * inBody.requestsPerSec) / bare.requestsPerSec)}%; query-credential gateway: ${fmt((100 * inBody.requestsPerSec) / gw.requestsPerSec)}% | same targets |
| Worker drain, identifies applied/s (1 process) | **${fmt(drain.batched.median.eventsPerSec)}** (${fmt(DRAIN_EVENTS)} identifies in jobs of ${GATEWAY_BATCH}) | naive one-job-one-upsert worker: ${fmt(drain.naive.median.eventsPerSec)} → ${ratio(drain.batched.median.eventsPerSec, drain.naive.median.eventsPerSec)} | ≥ 20,000/s, ≥ 8× naive |
| Same, change feed on beside off: identifies applied/s with the capture's triggers ([docs/changes.md](docs/changes.md)) | **${fmt(drain.batched.median.eventsPerSec)}** (the row above) | the same drain with the capture's triggers disabled: ${fmt(drain.feedOff.median.eventsPerSec)} → feed on is ${fmt((100 * drain.batched.median.eventsPerSec) / drain.feedOff.median.eventsPerSec)}% of off (each round: ${drain.batched.runs.map((run, i) => `${fmt((100 * run.eventsPerSec) / drain.feedOff.runs[i].eventsPerSec)}%`).join(", ")}) | ≥ 75% of off: ${drain.batched.median.eventsPerSec >= 0.75 * drain.feedOff.median.eventsPerSec ? "met" : "not met"} |
| Worker drain, mixed traffic (70% identify, 10% edit, 10% tags, 5% unsubscribe/resubscribe, 3% delete, 2% reidentify), operations applied/s | **${fmt(drain.mixed.median.eventsPerSec)}** (${fmt(DRAIN_EVENTS)} operations in jobs of ${GATEWAY_BATCH}) | identify-only drain: ${fmt((100 * drain.mixed.median.eventsPerSec) / drain.batched.median.eventsPerSec)}% | ≥ 80% of identify-only |
`;
    writeResults("identify", { intake: intakeResults, drain }, markdown);
  } finally {
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
