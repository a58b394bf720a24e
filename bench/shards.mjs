// Intake queue shards' cost (docs/operations-redis.md, "Redis Cluster"): gateway intake with
// INTAKE_QUEUE_SHARDS=3 beside the same gateway with 1, both on one private Redis Cluster of three
// primaries (scripts/redis-cluster.sh, loopback ports from BENCH_CLUSTER_PORT, 7101), taking
// turns: single identify calls and batches of 1,000. On one small machine the three nodes share
// its cores, so this measures what the shards cost (more, smaller job writes, a micro-batcher a
// shard), not the scaling a cluster of machines gives. Usage: npm run build && node bench/shards.mjs
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Cluster } from "ioredis";
import {
  batchIntake,
  batchRequests,
  createBenchDatabase,
  ctl,
  intake,
  median,
  repeatInTurns,
  ROOT,
  startGateway,
  uniqueName,
  writeResults,
} from "./lib.mjs";

const SHARDS = Number(process.env.BENCH_SHARDS ?? 3);
const SINGLE_CONNECTIONS = 100;
const BATCH_CONNECTIONS = 4;
const BATCH_SIZE = 1_000;
const DURATION_S = Number(process.env.BENCH_DURATION ?? 8);
/** Each gateway first takes this much load unmeasured, so no run pays for its JIT compiling. */
const WARMUP_S = 2;
const FIRST_PORT = Number(process.env.BENCH_CLUSTER_PORT ?? 7101);
const NODES = [0, 1, 2].map((n) => `127.0.0.1:${FIRST_PORT + n}`).join(",");

const requests = batchRequests(BATCH_SIZE);

/** The cluster of scripts/redis-cluster.sh, in a folder of the bench's own. */
function clusterScript(action, dir) {
  execFileSync(join(ROOT, "scripts", "redis-cluster.sh"), [action], {
    env: { ...process.env, REDIS_CLUSTER_DIR: dir, REDIS_CLUSTER_PORT: String(FIRST_PORT) },
    stdio: ["ignore", "ignore", "inherit"],
  });
}

const fmt = (n, digits = 0) =>
  n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function main() {
  const db = await createBenchDatabase("shards");
  const dir = mkdtempSync(join(tmpdir(), "cm-bench-cluster-"));
  clusterScript("start", dir);
  const client = new Cluster(NODES.split(",").map((node) => ({ host: "127.0.0.1", port: Number(node.split(":")[1]) })));
  const gateways = {};
  try {
    const { auth_token: authToken } = ctl(db.url, ["project", "create", "--name", "bench"]);
    for (const [name, shards] of [
      ["one", "1"],
      ["many", String(SHARDS)],
    ]) {
      gateways[name] = await startGateway({
        databaseUrl: db.url,
        queuePrefix: uniqueName(`bench_shards_${name}`),
        extra: { REDIS_URL: `redis://${NODES.split(",")[0]}`, REDIS_CLUSTER_NODES: NODES, INTAKE_QUEUE_SHARDS: shards },
      });
    }
    const flushAll = () => Promise.all(client.nodes("master").map((node) => node.flushall()));
    const measure = (gateway, kind, duration) => async () => {
      const run =
        kind === "single"
          ? await intake(gateway.url, `/api/v2/users/track?auth_token=${authToken}`, SINGLE_CONNECTIONS, duration)
          : await batchIntake(gateway.url, authToken, requests, BATCH_CONNECTIONS, duration);
      // No worker runs: what is queued is dropped, so each run meets the same empty cluster.
      await flushAll();
      return { ...run, operationsPerSec: run.requestsPerSec * (kind === "single" ? 1 : BATCH_SIZE) };
    };
    for (const gateway of Object.values(gateways)) {
      await measure(gateway, "single", WARMUP_S)();
      await measure(gateway, "batch", WARMUP_S)();
    }
    const results = await repeatInTurns(
      {
        "single calls, 1 shard": measure(gateways.one, "single", DURATION_S),
        [`single calls, ${SHARDS} shards`]: measure(gateways.many, "single", DURATION_S),
        "batches, 1 shard": measure(gateways.one, "batch", DURATION_S),
        [`batches, ${SHARDS} shards`]: measure(gateways.many, "batch", DURATION_S),
      },
      { alternate: true },
    );
    // Each round's two runs met the same load: the median of the rounds' ratios is the figure.
    const row = (kind, label) => {
      const one = results[`${kind}, 1 shard`];
      const many = results[`${kind}, ${SHARDS} shards`];
      const ratios = many.runs.map((run, i) => run.operationsPerSec / one.runs[i].operationsPerSec);
      const describe = ({ median }) =>
        `${fmt(median.operationsPerSec)}/s (p50 ${median.p50} ms, p99 ${median.p99} ms, non-2xx ${median.non2xx})`;
      return (
        `| ${label} | **${describe(many)}** | 1 shard: ${describe(one)} → ${SHARDS} shards are **${fmt(100 * median(ratios))}%** ` +
        `of 1 (median of the rounds; ratio of the medians ${fmt((100 * many.median.operationsPerSec) / one.median.operationsPerSec)}%; ` +
        `each round: ${ratios.map((ratio) => `${fmt(100 * ratio)}%`).join(", ")}) |`
      );
    };
    const runs = results["single calls, 1 shard"].runs.length;
    const markdown = `
### Intake queue shards on a Redis Cluster (medians of ${runs} runs, ${DURATION_S} s each, one gateway, three primaries on loopback, 2-core machine)

| Intake, identifies accepted/s, with INTAKE_QUEUE_SHARDS=${SHARDS} | Result | With 1, in the same rounds → ${SHARDS} as a share of 1 |
|---|---|---|
${row("single calls", `Single identify calls (${SINGLE_CONNECTIONS} connections)`)}
${row("batches", `Batches of ${fmt(BATCH_SIZE)} identifies (\`POST /batch\`, ${BATCH_CONNECTIONS} connections)`)}
`;
    writeResults("shards", { results, shards: SHARDS, batchSize: BATCH_SIZE }, markdown);
  } finally {
    for (const gateway of Object.values(gateways)) await gateway.stop();
    client.disconnect();
    clusterScript("stop", dir);
    rmSync(dir, { recursive: true, force: true });
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
