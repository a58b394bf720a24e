// Memory of one gateway while 5 MiB batch bodies with a bogus token inside arrive (issue 33):
// nested arrays, then batches of `{}`; its peak resident memory against the pod limit (512 MiB),
// with the heap cap of k8s/base.
// Usage: npm run build && node bench/hostile-bodies.mjs
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { createBenchDatabase, startGateway, uniqueName } from "./lib.mjs";

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8);
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const NODE_OPTIONS = "--max-old-space-size=320";
const BYTES = 5 * 1024 * 1024 - 64;
const OPEN = '{"auth_token":"cmt_1_bogus","batch":';

const half = Math.floor((BYTES - OPEN.length - 1) / 2);
const BODIES = {
  "nested arrays": `${OPEN}${"[".repeat(half)}${"]".repeat(half)}}`,
  "batches of {}": `${OPEN}[${"{},".repeat(Math.floor((BYTES - OPEN.length - 4) / 3))}{}]}`,
};

const residentMiB = (pid, field = "VmRSS") =>
  Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;

async function measure(databaseUrl, body) {
  const gateway = await startGateway({
    databaseUrl,
    queuePrefix: uniqueName("bench_hostile"),
    extra: { NODE_OPTIONS },
  });
  const statuses = {};
  const startMiB = residentMiB(gateway.child.pid);
  const until = Date.now() + DURATION_S * 1000;
  const client = async () => {
    while (Date.now() < until && gateway.child.exitCode === null) {
      const status = await fetch(`${gateway.url}/api/v2/batch`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      })
        .then(async (response) => (await response.arrayBuffer(), response.status))
        .catch(() => "connection error");
      statuses[status] = (statuses[status] ?? 0) + 1;
      if (status !== 401) await sleep(100);
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, client));
  const peakMiB = residentMiB(gateway.child.pid, "VmHWM");
  await gateway.stop();
  return { startMiB, peakMiB, statuses };
}

const db = await createBenchDatabase("hostile");
try {
  for (const [name, body] of Object.entries(BODIES)) {
    const { startMiB, peakMiB, statuses } = await measure(db.url, body);
    console.log(
      `${name}: ${CONNECTIONS} connections, ${DURATION_S} s: gateway RSS ${Math.round(startMiB)} MiB at start, peak ${Math.round(peakMiB)} MiB; answers ${JSON.stringify(statuses)}`,
    );
  }
} finally {
  await db.drop();
}
