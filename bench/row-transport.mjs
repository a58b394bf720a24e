// What each way of sending a statement's rows costs (libs/db json.ts jsonRows, which the worker's
// profile merge and event store read their batch through): the workers' own statements
// (applyProfileWrites on 500 identifies, storeEvents on 500 tracks) with jsonRows swapped for
// each candidate transport, batch by batch in turns from one connection, its backend's CPU read
// from /proc/<pid>/schedstat (ns) around each statement, and this process's CPU (postgres.js
// serialising the parameters) beside it.
// Usage: npm run build && node bench/row-transport.mjs   (BENCH_RUNS, BENCH_TRANSPORT_BATCHES)
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import postgres from "postgres";
import { applyProfileWrites, ensureEventPartitions, profileKeySecrets, storeEvents } from "@cm/db";
import { eventWithStoredKey, parseTrack, profileKeysWith } from "@cm/domain";
import { profileWrites } from "../libs/app/dist/profiles/apply-state-operations.js";
import {
  createBenchDatabase,
  identifyEvent,
  median,
  profilesTableDdl,
  repeat,
  RUNS,
  seedEventUsers,
  writeResults,
} from "./lib.mjs";

const BATCHES = Number(process.env.BENCH_TRANSPORT_BATCHES ?? 56);
const PER_BATCH = 500;
const DAY_MS = 86_400_000;

// libs/db's compiled modules read `json_1.jsonRows` at each call, so replacing the export swaps
// the transport under the real statements.
const jsonModule = createRequire(import.meta.url)("../libs/db/dist/json.js");
const built = jsonModule.jsonRows;

const quoted = (name) => `"${name}"`;
/** A column read from JSON text (`->>`, or a text element) as its type. */
const fromText = (text, type) => (type === "text" ? text : `(${text})::${type}`);
/** A column read as jsonb, JSON null as SQL's NULL. */
const fromJsonb = (jsonb) => `nullif(${jsonb}, 'null')`;
const commaSeparated = (sql, fragments) => fragments.reduce((list, fragment) => sql`${list}, ${fragment}`);

/**
 * The candidates, each with jsonRows's signature and result: `columns` typed, named as given. libs/db's
 * own is measured too, so that the table says which it is and how far apart two runs of one transport are.
 */
const TRANSPORTS = {
  "libs/db's jsonRows, as built (one JSON object of named column arrays, each row's element by index)": built,
  // The same again, as a statement of its own (a prepared statement run in another schema than
  // the last time is planned again): how far apart two transports that cost the same measure.
  "libs/db's jsonRows again (a control)": (sql, ...args) => sql`${built(sql, ...args)} /* control */`,

  "JSON arrays read by position (jsonb_array_elements, j ->> 0)": (sql, rows, alias, columns) => {
    const names = Object.keys(columns);
    const tuples = rows.map((row) => names.map((name) => row[name] ?? null));
    const read = names.map((name, i) => {
      const field = columns[name] === "jsonb" ? fromJsonb(`j -> ${i}`) : fromText(`j ->> ${i}`, columns[name]);
      return `${field} AS ${quoted(name)}`;
    });
    return sql`(SELECT ${sql.unsafe(read.join(", "))} FROM jsonb_array_elements(${sql.json(tuples)}::jsonb) AS j) AS ${sql(alias)}`;
  },

  "one JSON object of named column arrays, zipped by ROWS FROM (jsonb_array_elements of each)": (
    sql,
    rows,
    alias,
    columns,
  ) => {
    const names = Object.keys(columns);
    const document = Object.fromEntries(names.map((name) => [name, rows.map((row) => row[name] ?? null)]));
    const elements = names.map((name) =>
      columns[name] === "jsonb"
        ? `jsonb_array_elements(d.d -> '${name}')`
        : `jsonb_array_elements_text(d.d -> '${name}')`,
    );
    const read = names.map((name) => {
      const column = `c.${quoted(name)}`;
      return `${columns[name] === "jsonb" ? fromJsonb(column) : fromText(column, columns[name])} AS ${quoted(name)}`;
    });
    return sql`(SELECT ${sql.unsafe(read.join(", "))}
                  FROM (SELECT ${sql.json(document)}::jsonb AS d) AS d,
                       ROWS FROM (${sql.unsafe(elements.join(", "))}) AS c (${sql.unsafe(names.map(quoted).join(", "))})
               ) AS ${sql(alias)}`;
  },

  "JSON objects, jsonb_to_recordset": (sql, rows, alias, columns) => {
    const definition = Object.entries(columns).map(([name, type]) => `${quoted(name)} ${type}`);
    return sql`jsonb_to_recordset(${sql.json(rows)}::jsonb) AS ${sql(alias)} (${sql.unsafe(definition.join(", "))})`;
  },

  "JSON objects read by name (jsonb_array_elements, j ->> 'name')": (sql, rows, alias, columns) => {
    const read = Object.entries(columns).map(([name, type]) => {
      const field = type === "jsonb" ? fromJsonb(`j -> '${name}'`) : fromText(`j ->> '${name}'`, type);
      return `${field} AS ${quoted(name)}`;
    });
    return sql`(SELECT ${sql.unsafe(read.join(", "))} FROM jsonb_array_elements(${sql.json(rows)}::jsonb) AS j) AS ${sql(alias)}`;
  },

  "one array parameter per named column (unnest($1::integer[], $2::text[], …))": (sql, rows, alias, columns) => {
    const names = Object.keys(columns);
    // postgres.js declares an array of booleans boolean, not boolean[], unless told (16: boolean).
    const arrays = names.map((name) => {
      const values = rows.map((row) => row[name] ?? null);
      return sql`${columns[name] === "boolean" ? sql.array(values, 16) : values}::${sql.unsafe(columns[name])}[]`;
    });
    return sql`unnest(${commaSeparated(sql, arrays)}) AS ${sql(alias)} (${sql.unsafe(names.map(quoted).join(", "))})`;
  },
};
const NAMES = Object.keys(TRANSPORTS);
const BY_POSITION = "JSON arrays read by position (jsonb_array_elements, j ->> 0)";

/** ns this process (the backend, for its pid) has run on a CPU. */
const runNs = (pid) => Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]);

/**
 * Runs `apply` with each transport in turn, keeping the backend's and this process's CPU for
 * each in `spent[transport]`. Each batch starts one transport further, every other round of them
 * in reverse, so that each takes every place in the turns and follows each other transport alike.
 */
async function inTurns(pid, batch, spent, apply) {
  const start = batch % NAMES.length;
  const rotated = [...NAMES.slice(start), ...NAMES.slice(0, start)];
  const order = Math.floor(batch / NAMES.length) % 2 === 0 ? rotated : rotated.reverse();
  for (const name of order) {
    jsonModule.jsonRows = TRANSPORTS[name];
    const [backend, client] = [runNs(pid), process.cpuUsage()];
    await apply(name);
    const used = process.cpuUsage(client);
    spent[name].postgres.push(runNs(pid) - backend);
    spent[name].client.push((used.user + used.system) * 1000);
  }
  jsonModule.jsonRows = built;
}

const sum = (values) => values.reduce((a, b) => a + b, 0);

/**
 * µs per row over every batch, and the median of each batch's ratio to the by-position
 * transport's batch: the machine's load comes in bursts that a batch meets and its neighbour
 * in the turns does not, and a burst moves a sum but hardly a median of ratios.
 */
const perRow = (spent, rows) =>
  Object.fromEntries(
    Object.entries(spent).map(([name, ns]) => [
      name,
      {
        postgres: sum(ns.postgres) / rows / 1000,
        byPosition: median(ns.postgres.map((batch, i) => batch / spent[BY_POSITION].postgres[i])),
        client: sum(ns.client) / rows / 1000,
      },
    ]),
  );
const nothingSpent = () => Object.fromEntries(NAMES.map((name) => [name, { postgres: [], client: [] }]));

/**
 * The profile merge: each transport writes to a profiles table of its own (a schema each), the
 * same batches, new profiles then the same profiles identified again.
 */
async function profileMerge(sql, pid) {
  const schemas = NAMES.map((_, i) => `transport_${i}`);
  for (const schema of schemas) {
    await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
    await sql.unsafe(profilesTableDdl(`${schema}.profiles`, "public.profiles", { partitioned: false }));
  }
  const total = BATCHES * PER_BATCH;
  const result = {};
  for (const [phase, offset] of [
    ["insert", 0],
    ["update", total],
  ]) {
    const spent = nothingSpent();
    for (let b = 0; b < BATCHES; b += 1) {
      const events = Array.from({ length: PER_BATCH }, (_, i) =>
        identifyEvent(1, offset + b * PER_BATCH + i, 2 * total),
      );
      const writes = profileWrites(events);
      await inTurns(pid, b, spent, async (name) => {
        await sql.unsafe(`SET search_path = ${schemas[NAMES.indexOf(name)]}, public`);
        await applyProfileWrites(sql, writes);
      });
    }
    result[`profile merge: ${phase}`] = perRow(spent, total);
  }
  await sql.unsafe(`SET search_path = public`);
  for (const schema of schemas) await sql.unsafe(`DROP SCHEMA ${schema} CASCADE`);
  return result;
}

/** The event store: every transport stores jobs of its own (distinct events), of 500 tracks of 500 users each, deduplication on. */
async function eventStore(sql, pid) {
  const now = Date.now();
  await ensureEventPartitions(sql, now - DAY_MS, now + DAY_MS);
  const [{ id: projectId }] = await sql`INSERT INTO projects (name) VALUES ('row transport') RETURNING id`;
  const keyOf = profileKeysWith(await profileKeySecrets(sql, [projectId]));
  const users = PER_BATCH * 4;
  await seedEventUsers(sql, projectId, keyOf, users, now - 60_000);
  await sql`ANALYZE profiles`;
  const job = (b) =>
    Array.from({ length: PER_BATCH }, (_, i) => {
      const n = b * PER_BATCH + i;
      const parsed = parseTrack(
        {
          identity: { id: `u-${n % users}` },
          event_name: "Viewed Product",
          data: { sku: `A-${n % 2_000}`, price: 5 + (n % 200) / 4, currency: "EUR", session: randomUUID() },
        },
        { projectId, receivedAt: now + b, eventId: randomUUID(), dedupWindowMs: 300_000 },
      );
      if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
      return eventWithStoredKey(parsed.value, keyOf);
    });
  const spent = nothingSpent();
  for (let b = 0; b < BATCHES; b += 1) {
    const jobs = new Map(NAMES.map((name) => [name, job(b)]));
    await inTurns(pid, b, spent, async (name) => {
      const { stored } = await storeEvents(sql, jobs.get(name));
      if (stored !== PER_BATCH) throw new Error(`${name} stored ${stored} events of ${PER_BATCH}`);
    });
  }
  await sql`TRUNCATE events, event_keys`;
  return { "event store (deduplication on)": perRow(spent, BATCHES * PER_BATCH) };
}

async function measure(databaseUrl) {
  const sql = postgres(databaseUrl, { max: 1, max_pipeline: 1, onnotice: () => {} });
  try {
    const [{ pid }] = await sql`SELECT pg_backend_pid() AS pid`;
    return { ...(await profileMerge(sql, pid)), ...(await eventStore(sql, pid)) };
  } finally {
    await sql.end();
  }
}

const fmt = (micros) => micros.toFixed(2);

async function main() {
  const db = await createBenchDatabase("row_transport");
  try {
    const { runs } = await repeat("row transport", () => measure(db.url));
    const statements = Object.keys(runs[0]);
    const rows = statements.flatMap((statement) =>
      NAMES.map((name) => {
        return {
          statement,
          transport: name,
          postgres: median(runs.map((run) => run[statement][name].postgres)),
          byPosition: median(runs.map((run) => run[statement][name].byPosition)),
          byPositionRuns: runs.map((run) => run[statement][name].byPosition),
          client: median(runs.map((run) => run[statement][name].client)),
        };
      }),
    );
    const markdown = `
### Postgres's and the client's CPU per row, by how the rows travel (medians of ${RUNS} runs of ${BATCHES} batches of ${PER_BATCH})

| Statement | Transport | Postgres backend | ÷ by position (each run) | Client (postgres.js) |
|---|---|---|---|---|
${rows.map((r) => `| ${r.statement} | ${r.transport} | ${fmt(r.postgres)} µs | **${r.byPosition.toFixed(3)}** (${r.byPositionRuns.map((x) => x.toFixed(3)).join(", ")}) | ${fmt(r.client)} µs |`).join("\n")}

The workers' own statements (libs/db \`applyProfileWrites\`, \`storeEvents\`) from one connection,
with libs/db's \`jsonRows\` swapped for each transport batch by batch in turns. Postgres backend: its
CPU over every batch, per row; ÷ by position: the median of each batch's ratio to the by-position
transport's batch beside it, for each run. Client: this process's CPU over the call (building and
serialising the parameters, reading the answer).
`;
    writeResults(
      "row-transport",
      { settings: { runs: RUNS, batches: BATCHES, perBatch: PER_BATCH }, rows, runs },
      markdown,
    );
  } finally {
    await db.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
