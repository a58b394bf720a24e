// Replica acknowledgement's cost (docs/operations-redis.md, "Replicas and Sentinel"): gateway
// intake with REDIS_REPLICAS_ACK=1 (each job write followed by a WAIT for one replica) beside the
// same gateway without it, both on one private Redis primary with one replica (redis-server, AOF
// with appendfsync everysec, on loopback ports), taking turns: single identify calls and batches
// of 1,000; and the time of one job write alone (libs/queue, one after another), with and
// without. Usage: npm run build && node bench/replicas.mjs   (BENCH_RUNS=5 for more runs)
import { setTimeout as sleep } from "node:timers/promises";
import { addProfileOperationsBatch, profileOperationsQueue, producerConnection } from "@cm/queue";
import {
  batchIntake,
  batchRequests,
  createBenchDatabase,
  ctl,
  identifyEvent,
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
/** Job writes timed one after another, of this many identifies each (a micro-batch under moderate load). */
const WRITES = 1_000;
const WRITE_SIZE = 50;

const requests = batchRequests(BATCH_SIZE);

/** One job write after another on a producer connection that waits for `replicas`: µs a write. */
async function timeWrites(port, replicas) {
  const connection = producerConnection({
    redisUrl: `redis://127.0.0.1:${port}`,
    redisReplicasAck: { replicas, timeoutMs: 500 },
  });
  await new Promise((resolve) => connection.once("ready", resolve));
  const queue = profileOperationsQueue(connection, uniqueName("bench_replicas_writes"));
  const operations = Array.from({ length: WRITE_SIZE }, (_, n) => identifyEvent(1, n, WRITE_SIZE));
  try {
    await addProfileOperationsBatch(queue, operations);
    const started = performance.now();
    for (let i = 0; i < WRITES; i += 1) await addProfileOperationsBatch(queue, operations);
    return { microsecondsPerWrite: ((performance.now() - started) * 1000) / WRITES };
  } finally {
    await queue.close();
    connection.disconnect();
  }
}

const fmt = (n, digits = 0) =>
  n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function main() {
  const db = await createBenchDatabase("replicas");
  const primary = await startRedis();
  const replica = await startRedis(["--replicaof", "127.0.0.1", String(primary.port)]);
  const gateways = {};
  try {
    while (!/^slave0:.*state=online/m.test(await primary.client.info("replication"))) await sleep(100);
    const { auth_token: authToken } = ctl(db.url, ["project", "create", "--name", "bench"]);
    for (const [name, replicas] of [
      ["off", "0"],
      ["ack", "1"],
    ]) {
      gateways[name] = await startGateway({
        databaseUrl: db.url,
        queuePrefix: uniqueName(`bench_replicas_${name}`),
        extra: { REDIS_URL: `redis://127.0.0.1:${primary.port}`, REDIS_REPLICAS_ACK: replicas },
      });
    }
    const measure = (gateway, kind, duration) => async () => {
      const run =
        kind === "single"
          ? await intake(gateway.url, `/api/v2/users/track?auth_token=${authToken}`, SINGLE_CONNECTIONS, duration)
          : await batchIntake(gateway.url, authToken, requests, BATCH_CONNECTIONS, duration);
      // No worker runs: what is queued is dropped (on the replica too), so each run meets the same Redis.
      await primary.client.flushall();
      return { ...run, operationsPerSec: run.requestsPerSec * (kind === "single" ? 1 : BATCH_SIZE) };
    };
    for (const gateway of Object.values(gateways)) {
      await measure(gateway, "single", WARMUP_S)();
      await measure(gateway, "batch", WARMUP_S)();
    }
    const written = (replicas) => async () => {
      const run = await timeWrites(primary.port, replicas);
      await primary.client.flushall();
      return run;
    };
    const results = await repeatInTurns(
      {
        "single calls, REDIS_REPLICAS_ACK=0": measure(gateways.off, "single", DURATION_S),
        "single calls, REDIS_REPLICAS_ACK=1": measure(gateways.ack, "single", DURATION_S),
        "batches, REDIS_REPLICAS_ACK=0": measure(gateways.off, "batch", DURATION_S),
        "batches, REDIS_REPLICAS_ACK=1": measure(gateways.ack, "batch", DURATION_S),
        "job writes, REDIS_REPLICAS_ACK=0": written(0),
        "job writes, REDIS_REPLICAS_ACK=1": written(1),
      },
      { alternate: true },
    );
    // The machine's load drifts between rounds: each round's two runs met the same load, so the
    // median of the rounds' ratios is the figure; the ratio of the medians is shown beside it.
    const row = (kind, label) => {
      const off = results[`${kind}, REDIS_REPLICAS_ACK=0`];
      const ack = results[`${kind}, REDIS_REPLICAS_ACK=1`];
      const ratios = ack.runs.map((run, i) => run.operationsPerSec / off.runs[i].operationsPerSec);
      const describe = ({ median }) =>
        `${fmt(median.operationsPerSec)}/s (p50 ${median.p50} ms, p99 ${median.p99} ms, non-2xx ${median.non2xx})`;
      return (
        `| ${label} | **${describe(ack)}** | REDIS_REPLICAS_ACK=0: ${describe(off)} → with is **${fmt(100 * median(ratios))}%** ` +
        `of without (median of the rounds; ratio of the medians ${fmt((100 * ack.median.operationsPerSec) / off.median.operationsPerSec)}%; ` +
        `each round: ${ratios.map((ratio) => `${fmt(100 * ratio)}%`).join(", ")}) |`
      );
    };
    const writes = {
      off: results["job writes, REDIS_REPLICAS_ACK=0"],
      ack: results["job writes, REDIS_REPLICAS_ACK=1"],
    };
    const added = writes.ack.runs.map((run, i) => run.microsecondsPerWrite - writes.off.runs[i].microsecondsPerWrite);
    const runs = results["single calls, REDIS_REPLICAS_ACK=1"].runs.length;
    const markdown = `
### Replica acknowledgement (medians of ${runs} runs, ${DURATION_S} s each, one gateway, a primary and a replica on loopback, 2-core machine)

| Intake, identifies accepted/s, with REDIS_REPLICAS_ACK=1 | Result | Without, in the same rounds → with as a share of without |
|---|---|---|
${row("single calls", `Single identify calls (${SINGLE_CONNECTIONS} connections)`)}
${row("batches", `Batches of ${fmt(BATCH_SIZE)} identifies (\`POST /batch\`, ${BATCH_CONNECTIONS} connections)`)}
| One job write of ${WRITE_SIZE} identifies, one after another (libs/queue \`addProfileOperationsBatch\`) | **${fmt(writes.ack.median.microsecondsPerWrite)} µs** a write | REDIS_REPLICAS_ACK=0: ${fmt(writes.off.median.microsecondsPerWrite)} µs → the WAIT adds **${fmt(median(added))} µs** (median of the rounds; each round: ${added.map((us) => fmt(us)).join(", ")}) |
`;
    writeResults("replicas", { results, batchSize: BATCH_SIZE }, markdown);
  } finally {
    for (const gateway of Object.values(gateways)) await gateway.stop();
    await replica.stop();
    await primary.stop();
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
