// Journey read benchmarks: GET /journeys/{id} and GET /journeys/{id}/messages of a 30-node
// journey, each beside a baseline measured in the same run: the same Koa middleware answering
// the same bytes, precomputed, without Postgres.
// Usage: npm run build && node bench/journeys.mjs   (BENCH_RUNS=5 for more runs)
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  clearQueue,
  createBenchDatabase,
  ctl,
  freePort,
  load,
  repeat,
  RUNS,
  serviceEnv,
  startGateway,
  startNode,
  uniqueName,
  waitForHttp,
  writeResults,
} from "./lib.mjs";

const CONNECTIONS = 100;
const DURATION_S = Number(process.env.BENCH_DURATION ?? 10);
const WARMUP_S = 3;
const NODES = 30;
const TARGET_SHARE = 0.5;
const TARGET_P99_MS = 25;

/** enter → 28 inner nodes (emails with three localized contents, delays, SMS, push) → exit. */
function thirtyNodeJourney() {
  const kinds = ["email", "delay", "sms", "push"];
  const content = (locale, isDefault, id) => ({
    locale,
    is_default: isDefault,
    subject: `Subject ${id} (${locale})`,
    preheader_text: `Preheader ${id} (${locale})`,
    body: { html: `<p>Body ${id}</p>`, text: `Body ${id}` },
  });
  const nodes = [{ id: 1, type: "enter" }];
  for (let id = 2; id < NODES; id += 1) {
    const type = kinds[(id - 2) % kinds.length];
    if (type === "delay") nodes.push({ id, type, delay: { duration: id, duration_unit: "hours", delivery_option: 0 } });
    else if (type === "email") {
      const contents = [content("en", true, id), content("fr", false, id), content("de", false, id)];
      nodes.push({
        id,
        type,
        title: `Email ${id}`,
        message: { from: "news@example.com", reply_to: "help@example.com", contents },
      });
    } else
      nodes.push({
        id,
        type,
        title: `${type} ${id}`,
        message: { from: null, reply_to: null, contents: [content("en", true, id)] },
      });
  }
  nodes.push({ id: NODES, type: "exit" });
  const edges = nodes.slice(1).map((node) => ({ from: node.id - 1, to: node.id }));
  return {
    name: "Bench journey",
    status: "active",
    trigger: { type: "event", event_name: "bench" },
    nodes,
    edges,
    audience: { segments: [1] },
  };
}

/**
 * The baseline server (run as `node bench/journeys.mjs baseline`): the gateway's own app
 * (createApp on gatewayDeps: every middleware, route and limit), built from the same settings as
 * startGateway builds it, except that the Postgres client answers every query at once with the
 * precomputed JSON, and API keys are accepted without a lookup.
 */
async function serveBaseline() {
  const dist = (path) => import(new URL(`../${path}`, import.meta.url).href);
  const { createApp } = await dist("apps/gateway/dist/app.js");
  const { gatewayDeps, gatewayRedis } = await dist("apps/gateway/dist/gateway.js");
  const { CredentialCache } = await dist("apps/gateway/dist/auth/credential-cache.js");
  const { createLogger, loadConfig } = await dist("libs/config/dist/index.js");

  const config = loadConfig();
  const precomputedRows = [{ journey: process.env.JOURNEY, messages: process.env.MESSAGES }];
  const deps = gatewayDeps(config, createLogger("baseline", "warn"), gatewayRedis(config), async () => precomputedRows);
  deps.credentials = new CredentialCache(async () => ({
    projectId: 1,
    kind: "api_key",
    permissions: ["campaign:read"],
  }));
  const server = createApp(deps).listen(config.port, "127.0.0.1");
  server.keepAliveTimeout = 65_000;
  process.once("SIGTERM", () => server.close(() => process.exit(0)));
}

async function startBaseline(queuePrefix, journey, messages) {
  const port = await freePort();
  const env = { ...serviceEnv({ queuePrefix, port }), JOURNEY: journey, MESSAGES: messages };
  const baseline = startNode("bench/journeys.mjs", env, ["baseline"]);
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/readyz`);
  return { ...baseline, url };
}

/**
 * One endpoint on both servers: a warm-up each, then RUNS rounds of a gateway run directly
 * followed by a baseline run, so that both see the same load from whatever else the machine runs.
 */
async function measurePair(name, path, gatewayUrl, baselineUrl, apiKey) {
  const once = async (url, duration) => {
    const run = await load({
      url: `${url}${path}`,
      headers: { authorization: `Bearer ${apiKey}` },
      connections: CONNECTIONS,
      duration,
    });
    if (run.non2xx > 0 || run.errors > 0)
      throw new Error(`${url}${path}: ${run.non2xx} non-2xx answers, ${run.errors} errors`);
    return run;
  };
  await once(gatewayUrl, WARMUP_S);
  await once(baselineUrl, WARMUP_S);
  return repeat(name, async () => {
    const gateway = await once(gatewayUrl, DURATION_S);
    const baseline = await once(baselineUrl, DURATION_S);
    return {
      requestsPerSec: gateway.requestsPerSec,
      p50: gateway.p50,
      p99: gateway.p99,
      baselineRequestsPerSec: baseline.requestsPerSec,
      baselineP50: baseline.p50,
      baselineP99: baseline.p99,
      share: gateway.requestsPerSec / baseline.requestsPerSec,
    };
  });
}

async function main() {
  const db = await createBenchDatabase("journeys");
  const dir = mkdtempSync(join(tmpdir(), "bench-journeys-"));
  const servers = [];
  const queuePrefix = uniqueName("bench_journeys");
  try {
    const file = join(dir, "journey.json");
    writeFileSync(file, JSON.stringify(thirtyNodeJourney()));
    const { project, api_key: apiKey } = ctl(db.url, ["project", "create", "--name", "bench"]);
    const { id: journeyId } = ctl(db.url, ["journey", "import", "--project", String(project.id), file]);
    const paths = { journey: `/api/v2/journeys/${journeyId}`, messages: `/api/v2/journeys/${journeyId}/messages` };

    const gateway = await startGateway({ databaseUrl: db.url, queuePrefix });
    servers.push(gateway);
    const fetchText = async (path) =>
      (await fetch(`${gateway.url}${path}`, { headers: { authorization: apiKey } })).text();
    const bodies = { journey: await fetchText(paths.journey), messages: await fetchText(paths.messages) };
    const baseline = await startBaseline(queuePrefix, bodies.journey, bodies.messages);
    servers.push(baseline);

    const results = {};
    for (const name of ["journey", "messages"])
      results[name] = await measurePair(name, paths[name], gateway.url, baseline.url, apiKey);

    const fmt = (n, digits = 0) =>
      n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
    const row = (name) => {
      const m = results[name].median;
      const met = m.share >= TARGET_SHARE && m.p99 <= TARGET_P99_MS;
      return `| \`GET ${paths[name].replace(String(journeyId), "{id}")}\` (${fmt(Buffer.byteLength(bodies[name]))} bytes) | **${fmt(m.requestsPerSec)} req/s**, p50 ${m.p50} ms, p99 ${m.p99} ms | ${fmt(m.baselineRequestsPerSec)} req/s, p50 ${m.baselineP50} ms, p99 ${m.baselineP99} ms | ${fmt(100 * m.share)}% | ${met ? "met" : "not met"} |`;
    };
    const markdown = `
### Journey reads (medians of ${RUNS} runs, ${CONNECTIONS} connections, ${DURATION_S} s each, ${NODES}-node journey)

| Endpoint | Gateway (Postgres) | Baseline: same app, precomputed JSON, no Postgres | Share of baseline | Target (≥ ${TARGET_SHARE * 100}% and p99 ≤ ${TARGET_P99_MS} ms) |
|---|---|---|---|---|
${row("journey")}
${row("messages")}
`;
    writeResults(
      "journeys",
      {
        nodes: NODES,
        bytes: { journey: Buffer.byteLength(bodies.journey), messages: Buffer.byteLength(bodies.messages) },
        results,
      },
      markdown,
    );
  } finally {
    for (const server of servers) await server.stop();
    await clearQueue(queuePrefix);
    rmSync(dir, { recursive: true, force: true });
    await db.drop();
  }
}

const run = process.argv[2] === "baseline" ? serveBaseline : main;
run().catch((error) => {
  console.error(error);
  process.exit(1);
});
