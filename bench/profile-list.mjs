// Profile list benchmark: GET /api/v2/users pages on a project of 1,000,000 profiles, by each
// filter (docs/api.md "List users"), beside the single profile read (GET /users/{id}) measured
// in the same run, in turns. Latency is what a caller of a list waits for, so few connections.
// Usage: npm run build && node bench/profile-list.mjs   (BENCH_RUNS=5 for more runs, BENCH_PROFILES)
import postgres from "postgres";
import { storedProfileKey } from "../libs/domain/dist/index.js";
import {
  clearQueue,
  createBenchDatabase,
  ctl,
  load,
  repeatInTurns,
  RUNS,
  startGateway,
  uniqueName,
  writeResults,
} from "./lib.mjs";

const PROFILES = Number(process.env.BENCH_PROFILES ?? 1_000_000);
const CONNECTIONS = 4;
const DURATION_S = Number(process.env.BENCH_DURATION ?? 5);
const TARGET_P99_MS = 50;
const SEED_BATCH = 50_000;

/** How many of the profiles each filter matches: one in `every`. */
const VIP_EVERY = 100;
const RARE_EVERY = 10_000;
const UNSUBSCRIBED_EVERY = 50;
const RECENT_EVERY = 1_000;
const HOUR_MS = 3_600_000;

/** Profiles as the workers store them: stamped email and data; some tagged, unsubscribed, changed lately. */
async function seedProfiles(sql, projectId, secret) {
  const stamped = (v) => ({ t: 1_700_000_000_000, h: "seed", v });
  for (let start = 0; start < PROFILES; start += SEED_BATCH) {
    const rows = Array.from({ length: Math.min(SEED_BATCH, PROFILES - start) }, (_, i) => {
      const n = start + i;
      const tags = {};
      if (n % VIP_EVERY === 0) tags.vip = stamped(true);
      if (n % RARE_EVERY === 0) tags.rare = stamped(true);
      return [
        storedProfileKey(secret, `user-${n}`),
        `user-${n}`,
        JSON.stringify(stamped(`User-${n}@Example.com`)),
        JSON.stringify({ plan: stamped(["free", "team", "pro"][n % 3]), language: stamped("en") }),
        JSON.stringify(tags),
        n % UNSUBSCRIBED_EVERY === 0 ? JSON.stringify(stamped(true)) : null,
        n % RECENT_EVERY === 0 ? 0 : 30 * 24,
      ];
    });
    const column = (i) => rows.map((row) => row[i]);
    await sql`
      INSERT INTO profiles (project_id, key, external_id, created_t, last_created_t, email, data, tags, unsubscribed,
                            updated_at)
      SELECT ${projectId}, key, id, 1700000000000, 1700000000000, email::jsonb, data::jsonb, tags::jsonb,
             unsubscribed::jsonb, now() - make_interval(hours => hours_ago)
        FROM unnest(${column(0)}::text[], ${column(1)}::text[], ${column(2)}::text[], ${column(3)}::text[],
                    ${column(4)}::text[], ${column(5)}::text[], ${column(6)}::integer[])
             AS s(key, id, email, data, tags, unsubscribed, hours_ago)`;
  }
  await sql`VACUUM ANALYZE profiles`;
}

async function main() {
  const db = await createBenchDatabase("profile_list");
  const queuePrefix = uniqueName("bench_profile_list");
  const servers = [];
  try {
    const { project, api_key: apiKey } = ctl(db.url, ["project", "create", "--name", "bench"]);
    const sql = postgres(db.url, { max: 1, onnotice: () => {} });
    const [{ secret }] = await sql`SELECT profile_key_secret AS secret FROM projects WHERE id = ${project.id}`;
    const seeding = Date.now();
    await seedProfiles(sql, project.id, secret);
    console.error(`  seeded ${PROFILES} profiles in ${((Date.now() - seeding) / 1000).toFixed(1)} s`);
    await sql.end();

    const gateway = await startGateway({ databaseUrl: db.url, queuePrefix });
    servers.push(gateway);
    const middle = Math.floor(PROFILES / 2);
    const since = new Date(Date.now() - HOUR_MS).toISOString();
    const paths = {
      [`Read one profile, \`GET /users/{id}\` (the baseline)`]: `/api/v2/users/user-${middle}`,
      "No filter, `?limit=25`": "/api/v2/users?limit=25",
      "By email (index), `?email=…`": `/api/v2/users?email=user-${middle}%40example.com`,
      [`Tag on 1 in ${VIP_EVERY}, \`?tag=vip\``]: "/api/v2/users?tag=vip",
      [`Tag on 1 in ${RARE_EVERY.toLocaleString("en-US")}, \`?tag=rare\``]: "/api/v2/users?tag=rare",
      [`Unsubscribed, 1 in ${UNSUBSCRIBED_EVERY}, \`?unsubscribed=true\``]: "/api/v2/users?unsubscribed=true",
      [`Changed in the last hour, 1 in ${RECENT_EVERY.toLocaleString("en-US")}, \`?updated_since=…\``]: `/api/v2/users?updated_since=${since}`,
    };
    const pageSizes = {};
    for (const [name, path] of Object.entries(paths)) {
      const response = await fetch(`${gateway.url}${path}`, { headers: { authorization: `Bearer ${apiKey}` } });
      if (response.status !== 200) throw new Error(`${path}: ${response.status} ${await response.text()}`);
      const body = await response.json();
      pageSizes[name] = Array.isArray(body.data) ? body.data.length : 1;
    }
    const measurements = Object.fromEntries(
      Object.entries(paths).map(([name, path]) => [
        name,
        async () => {
          const run = await load({
            url: `${gateway.url}${path}`,
            headers: { authorization: `Bearer ${apiKey}` },
            connections: CONNECTIONS,
            duration: DURATION_S,
          });
          if (run.non2xx > 0 || run.errors > 0) throw new Error(`${path}: ${run.non2xx} non-2xx, ${run.errors} errors`);
          return { requestsPerSec: run.requestsPerSec, p50: run.p50, p99: run.p99 };
        },
      ]),
    );
    const results = await repeatInTurns(measurements);
    const fmt = (n) => n.toLocaleString("en-US", { maximumFractionDigits: 0 });
    const rows = Object.keys(paths).map((name) => {
      const m = results[name].median;
      const target = name.includes("baseline") ? "" : m.p99 <= TARGET_P99_MS ? "met" : "not met";
      return `| ${name} | ${pageSizes[name]} | **p99 ${m.p99} ms**, p50 ${m.p50} ms | ${fmt(m.requestsPerSec)} | ${target} |`;
    });
    const markdown = `
### Profile list on ${fmt(PROFILES)} profiles (medians of ${RUNS} runs, ${CONNECTIONS} connections, ${DURATION_S} s each, in turns)

| First page of | Profiles on it | Latency | Pages/s | Target (p99 ≤ ${TARGET_P99_MS} ms) |
|---|---|---|---|---|
${rows.join("\n")}

A page reads at most 2,000 rows (\`PROFILE_LIST_SCAN_ROWS\`; of the address, through its index, with an email:
migration 018), so its page may hold fewer profiles than asked, or none, with a cursor to go on.
`;
    writeResults("profile-list", { profiles: PROFILES, connections: CONNECTIONS, pageSizes, results }, markdown);
  } finally {
    for (const server of servers) await server.stop();
    await clearQueue(queuePrefix);
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
