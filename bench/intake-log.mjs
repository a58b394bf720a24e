// The intake log's cost to the intake (docs/intake-log.md): gateway intake with the log on (its
// defaults: 10,000 entries a project, 2 KiB of each body) beside the same gateway with it off
// (INTAKE_LOG_MAX_ENTRIES=0), on the same Postgres and a private Redis of the bench's own (the
// machine's is shared with other sessions' tests, whose load it would measure), taking turns:
// single identify calls and batches of 1,000 (an entry per operation). No worker runs: what each
// run queues is dropped before the next. Usage: npm run build && node bench/intake-log.mjs   (BENCH_RUNS=5 for more runs)
import {
  batchIntake,
  batchRequests,
  cpuSeconds,
  createBenchDatabase,
  ctl,
  intake,
  median,
  repeatInTurns,
  startGateway,
  startRedis,
  uniqueName,
  writeResults,
} from "./lib.mjs";

const SINGLE_CONNECTIONS = 100;
const BATCH_CONNECTIONS = 4;
const BATCH_SIZE = 1_000;
const DURATION_S = Number(process.env.BENCH_DURATION ?? 8);
/** Each gateway first takes this much load unmeasured, so no run pays for its JIT compiling. */
const WARMUP_S = 2;

const requests = batchRequests(BATCH_SIZE);
const fmt = (n, digits = 0) =>
  n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function main() {
  const db = await createBenchDatabase("intake_log");
  const redis = await startRedis();
  const gateways = {};
  try {
    const { auth_token: authToken } = ctl(db.url, ["project", "create", "--name", "bench"]);
    for (const [name, entries] of [
      ["off", "0"],
      ["on", "10000"],
    ]) {
      gateways[name] = await startGateway({
        databaseUrl: db.url,
        queuePrefix: uniqueName(`bench_intake_log_${name}`),
        extra: { REDIS_URL: `redis://127.0.0.1:${redis.port}`, INTAKE_LOG_MAX_ENTRIES: entries },
      });
    }
    const measure = (gateway, kind, duration) => async () => {
      const [gatewayBefore, redisBefore] = [cpuSeconds(gateway.child.pid), cpuSeconds(redis.pid)];
      const run =
        kind === "single"
          ? await intake(gateway.url, `/api/v2/users/track?auth_token=${authToken}`, SINGLE_CONNECTIONS, duration)
          : await batchIntake(gateway.url, authToken, requests, BATCH_CONNECTIONS, duration);
      const operations = run.total * (kind === "single" ? 1 : BATCH_SIZE);
      // CPU per operation is less swayed than the rate by what else the shared machine runs.
      const cpu = {
        gatewayMicroseconds: ((cpuSeconds(gateway.child.pid) - gatewayBefore) * 1e6) / operations,
        redisMicroseconds: ((cpuSeconds(redis.pid) - redisBefore) * 1e6) / operations,
      };
      // The queues and the log start each run empty.
      await redis.client.flushall();
      return { ...run, ...cpu, operationsPerSec: run.requestsPerSec * (kind === "single" ? 1 : BATCH_SIZE) };
    };
    for (const gateway of Object.values(gateways)) {
      await measure(gateway, "single", WARMUP_S)();
      await measure(gateway, "batch", WARMUP_S)();
    }
    const results = await repeatInTurns(
      {
        "single calls, log off": measure(gateways.off, "single", DURATION_S),
        "single calls, log on": measure(gateways.on, "single", DURATION_S),
        "batches, log off": measure(gateways.off, "batch", DURATION_S),
        "batches, log on": measure(gateways.on, "batch", DURATION_S),
      },
      { alternate: true },
    );
    // The machine's load drifts between rounds: each round's two runs met the same load, so the
    // median of the rounds' ratios is the figure; the ratio of the medians is shown beside it.
    const row = (kind, label) => {
      const off = results[`${kind}, log off`];
      const on = results[`${kind}, log on`];
      const ratios = on.runs.map((run, i) => run.operationsPerSec / off.runs[i].operationsPerSec);
      const describe = ({ median }) =>
        `${fmt(median.operationsPerSec)}/s (p50 ${median.p50} ms, p99 ${median.p99} ms, non-2xx ${median.non2xx}; ` +
        `CPU per identify: gateway ${fmt(median.gatewayMicroseconds, 1)} µs, Redis ${fmt(median.redisMicroseconds, 1)} µs)`;
      const cpuRatios = on.runs.map(
        (run, i) =>
          (run.gatewayMicroseconds + run.redisMicroseconds) /
          (off.runs[i].gatewayMicroseconds + off.runs[i].redisMicroseconds),
      );
      return (
        `| ${label} | **${describe(on)}** | log off: ${describe(off)} → on is **${fmt(100 * median(ratios))}%** ` +
        `of off (median of the rounds; ratio of the medians ${fmt((100 * on.median.operationsPerSec) / off.median.operationsPerSec)}%; ` +
        `each round: ${ratios.map((ratio) => `${fmt(100 * ratio)}%`).join(", ")}); gateway and Redis CPU per identify, on ` +
        `as a share of off: **${fmt(100 * median(cpuRatios))}%** (each round: ${cpuRatios.map((ratio) => `${fmt(100 * ratio)}%`).join(", ")}) |`
      );
    };
    const runs = results["single calls, log on"].runs.length;
    const markdown = `
### Intake log (medians of ${runs} runs, ${DURATION_S} s each, one gateway, log on beside off in turns, a private Redis, 2-core machine shared with other sessions)

| Intake, identifies accepted/s, with the intake log on ([docs/intake-log.md](docs/intake-log.md)) | Result | Off (\`INTAKE_LOG_MAX_ENTRIES=0\`), in the same rounds → on as a share of off |
|---|---|---|
${row("single calls", `Single identify calls (${SINGLE_CONNECTIONS} connections): an entry each`)}
${row("batches", `Batches of ${fmt(BATCH_SIZE)} identifies (\`POST /batch\`, ${BATCH_CONNECTIONS} connections): entries for the first 50`)}
`;
    writeResults("intake-log", { results, batchSize: BATCH_SIZE }, markdown);
  } finally {
    for (const gateway of Object.values(gateways)) await gateway.stop();
    await redis.stop();
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
