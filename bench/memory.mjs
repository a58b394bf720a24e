// Memory with the largest bodies the API takes: the peak resident memory of one gateway and one
// worker process while 256 KiB identifies arrive and are applied, with micro-batches bounded by
// bytes and a gateway holding a bounded number of bytes of bodies at once (the defaults) and,
// as the baseline measured in the same run, batches bounded by count alone and bodies in
// flight unbounded; then, with the defaults, 5 MiB batch calls of 1,000 identifies each.
// Usage: npm run build && node bench/memory.mjs
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import {
  clearQueue,
  createBenchDatabase,
  ctl,
  load,
  REDIS_URL,
  serviceEnv,
  startGateway,
  startNode,
  uniqueName,
  writeResults,
} from "./lib.mjs";

/** As many bodies at once as one micro-batch of 500 identifies holds. */
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 500);
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
/** The pod memory limit of both processes in k8s/base, and the V8 heap cap its config map sets. */
const POD_LIMIT_MIB = 512;
const NODE_OPTIONS = "--max-old-space-size=320";
/** Just under the 256 KiB body limit, with the rest of the identify around it. */
const BLOB_BYTES = 256 * 1024 - 200;

const bodies = Array.from({ length: 20 }, (_, n) => ({
  method: "POST",
  body: JSON.stringify({ id: `large-${n}`, data: { n, blob: String.fromCharCode(97 + n).repeat(BLOB_BYTES) } }),
}));

/** Batch calls just under their 5 MiB limit: 1,000 identifies of about 5 KiB each. */
const BATCH_OPERATIONS = 1_000;
const BATCH_CONNECTIONS = 50;
const batchBodies = Array.from({ length: 4 }, (_, b) => ({
  method: "POST",
  body: JSON.stringify({
    batch: Array.from({ length: BATCH_OPERATIONS }, (_, n) => ({
      type: "identify",
      id: `batch-${b}-${n}`,
      data: { n, blob: String.fromCharCode(97 + (n % 26)).repeat(5_000) },
    })),
  }),
}));

/** The 256 KiB identifies, or the 5 MiB batches: where they go, and how many identifies each holds. */
const LOADS = {
  identify: { path: "/api/v2/users/track", requests: bodies, connections: CONNECTIONS, perRequest: 1 },
  batch: { path: "/api/v2/batch", requests: batchBodies, connections: BATCH_CONNECTIONS, perRequest: BATCH_OPERATIONS },
};

function residentMiB(pid) {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Number(match[1]) / 1024 : 0;
}

/** Keeps the highest resident memory of each process until stopped. */
function samplePeaks(processes) {
  const peaks = Object.fromEntries(Object.keys(processes).map((name) => [name, 0]));
  const timer = setInterval(() => {
    for (const [name, pid] of Object.entries(processes)) {
      try {
        peaks[name] = Math.max(peaks[name], residentMiB(pid));
      } catch {
        // The process has just exited.
      }
    }
  }, 50);
  return { peaks, stop: () => clearInterval(timer) };
}

async function measure(databaseUrl, authToken, extra, { path, requests, connections, perRequest } = LOADS.identify) {
  const queuePrefix = uniqueName("bench_memory");
  const gateway = await startGateway({ databaseUrl, queuePrefix, extra });
  const worker = startNode("apps/worker/dist/main.js", serviceEnv({ databaseUrl, queuePrefix, extra }));
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  const queue = new Queue("identify", { connection: redis, prefix: queuePrefix });
  const sampler = samplePeaks({ gateway: gateway.child.pid, worker: worker.child.pid });
  try {
    const started = performance.now();
    const result = await load({
      url: `${gateway.url}${path}?auth_token=${authToken}`,
      method: "POST",
      headers: { "content-type": "application/json" },
      connections,
      duration: DURATION_S,
      requests,
      // A gateway dead of its heap answers nothing: 500 clients reconnecting at once with 5 MiB
      // of bodies each would then fill this process's heap instead.
      stopOn: gateway.exited,
    });
    while ((await queue.getJobCountByTypes("waiting", "active", "delayed")) > 0) await sleep(100);
    const failed = await queue.getFailedCount();
    if (failed > 0) throw new Error(`${failed} jobs failed`);
    const { exitCode, signalCode } = gateway.child;
    return {
      acceptedPerSec: ((result.total - result.non2xx) * perRequest) / DURATION_S,
      non2xx: result.non2xx,
      connectionErrors: result.errors,
      // Without bounds the gateway can run out of heap: it dies, and the rest of the load fails.
      gatewayExit: exitCode === null && signalCode === null ? null : (signalCode ?? `exit code ${exitCode}`),
      seconds: (performance.now() - started) / 1000,
      gatewayPeakMiB: sampler.peaks.gateway,
      workerPeakMiB: sampler.peaks.worker,
    };
  } finally {
    sampler.stop();
    await Promise.all([gateway.stop(), worker.stop()]);
    await queue.close();
    redis.disconnect();
    await clearQueue(queuePrefix);
  }
}

const fmt = (n) => Math.round(n).toLocaleString("en-US");

async function main() {
  const db = await createBenchDatabase("memory");
  try {
    const { auth_token: authToken } = ctl(db.url, ["project", "create", "--name", "bench"]);
    const bounded = await measure(db.url, authToken, { NODE_OPTIONS });
    const countOnly = await measure(db.url, authToken, {
      NODE_OPTIONS,
      PROFILE_OPERATIONS_BATCH_MAX_BYTES: String(2 ** 32 - 1),
      EVENTS_BATCH_MAX_BYTES: String(2 ** 32 - 1),
      BODY_BYTES_IN_FLIGHT: String(2 ** 32 - 1),
    });
    const batches = await measure(db.url, authToken, { NODE_OPTIONS }, LOADS.batch);
    const row = (label, r) =>
      `| ${label} | ${fmt(r.acceptedPerSec)} (turned away with 503: ${fmt(r.non2xx)}; connection errors: ${fmt(r.connectionErrors)}${r.gatewayExit === null ? "" : `; **the gateway died** during the load: ${r.gatewayExit}`}) | **${fmt(r.gatewayPeakMiB)} MiB** | **${fmt(r.workerPeakMiB)} MiB** |`;
    const markdown = `
### Memory with the largest bodies: 256 KiB identifies (${CONNECTIONS} connections) and 5 MiB batches; ${DURATION_S} s of load, then until applied; one gateway, one worker

| Bounds | Accepted identifies/s | Gateway peak RSS | Worker peak RSS |
|---|---|---|---|
${row("micro-batches of 1 MiB of bodies (and 500 identifies); 32 MiB of bodies in flight per gateway (the defaults)", bounded)}
${row("baseline: micro-batches of 500 identifies, bodies in flight unbounded", countOnly)}
${row(`the defaults, with 5 MiB batch calls of ${fmt(BATCH_OPERATIONS)} identifies of 5 KiB (${BATCH_CONNECTIONS} connections)`, batches)}

Both processes run with \`NODE_OPTIONS=${NODE_OPTIONS}\`, as k8s/base sets it. Pod memory limit in k8s/base: ${POD_LIMIT_MIB} MiB for each. ${
      Math.max(bounded.gatewayPeakMiB, bounded.workerPeakMiB, batches.gatewayPeakMiB, batches.workerPeakMiB) <
      POD_LIMIT_MIB
        ? "Both stay under it with the default."
        : "**Over the limit with the default.**"
    }
`;
    writeResults("memory", { bounded, countOnly, batches, podLimitMiB: POD_LIMIT_MIB }, markdown);
  } finally {
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
