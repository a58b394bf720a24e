import { connect, migrate, type Sql } from "@cm/db";
import { startGateway, type RunningGateway } from "@cm/gateway";
import { startWorker, type RunningWorker } from "@cm/worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntilApplied } from "../support/applied";
import { identifyLoad } from "../support/identify-load";
import { testConfig } from "../support/env";
import { testLogger } from "../support/logs";
import { startPrivatePostgres, type PrivatePostgres } from "../support/private-postgres";
import { createTestProject, type TestProject } from "../support/project";
import { createTestQueuePrefix } from "../support/queue";

// Postgres crashes (immediate stop) under load and comes back three seconds later: gateways
// keep accepting identifies of tokens they have checked, workers retry, and every identify
// answered 200 is applied once Postgres is back.

let postgres: PrivatePostgres;
let sql: Sql;
let project: TestProject;
let gateway: RunningGateway;
let worker: RunningWorker;
const queue = createTestQueuePrefix("postgres_stopped");

beforeAll(async () => {
  postgres = await startPrivatePostgres();
  sql = connect(postgres.url, { max: 2 });
  await migrate(sql);
  project = await createTestProject(sql);
  const config = testConfig(postgres.url, queue.prefix);
  gateway = await startGateway(config, testLogger("postgres_stopped"));
  worker = await startWorker(config, testLogger("postgres_stopped"));
});
afterAll(async () => {
  await Promise.all([gateway.stop(), worker.stop()]);
  await sql.end({ timeout: 1 });
  postgres.stop();
  await queue.cleanup();
});

describe("Postgres crashed under load", () => {
  it("loses no acknowledged identify", { timeout: 90_000 }, async () => {
    const load = identifyLoad(gateway.url, project.authToken, "pg-down", 10, Date.now() + 6_000);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    postgres.crash();
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    postgres.start();
    const { statuses, acknowledged } = await load;

    // The token was checked before the crash: its cached verdict keeps identify answering.
    expect([...statuses]).toEqual([200]);
    await waitUntilApplied(sql, project.id, acknowledged, 60_000);
  });
});
