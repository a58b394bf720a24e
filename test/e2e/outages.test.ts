import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type RunningGateway } from "@cm/gateway";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { ADMIN_DATABASE_PORT, REDIS_PORT, testConfig } from "../support/env";
import { testLogger } from "../support/logs";
import { createTestProject, type TestProject } from "../support/project";
import { createTestQueuePrefix } from "../support/queue";
import { TcpProxy } from "../support/tcp-proxy";
import { waitFor } from "../support/wait";

// The gateway reaches Postgres and Redis through proxies this file can cut.
let db: TestDatabase;
let project: TestProject;
let gateway: RunningGateway;
const queue = createTestQueuePrefix("outages");
const postgresProxy = new TcpProxy("127.0.0.1", ADMIN_DATABASE_PORT);
const redisProxy = new TcpProxy("127.0.0.1", REDIS_PORT);
/** How long the gateway holds a queue write while Redis is away (REDIS_FAILOVER_HOLD_MS). */
const REDIS_HOLD_MS = 3_000;

function viaProxy(url: string, port: number): string {
  const proxied = new URL(url);
  proxied.host = `127.0.0.1:${port}`;
  return proxied.toString();
}

async function track(body: object) {
  const response = await fetch(`${gateway.url}/api/v2/users/track?auth_token=${project.authToken}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const retryAfter = response.headers.get("retry-after");
  return { status: response.status, body: await response.json(), ...(retryAfter === null ? {} : { retryAfter }) };
}

async function readProfile(id: string, key = project.apiKey) {
  const response = await fetch(`${gateway.url}/api/v2/users/${id}`, { headers: { authorization: key } });
  return { status: response.status, body: await response.json(), retryAfter: response.headers.get("retry-after") };
}

async function queuedEventIds(): Promise<string[]> {
  const states = ["waiting", "delayed", "active", "completed", "failed"] as const;
  const jobs = await Promise.all(gateway.deps.profileOperationsQueues.map((queue) => queue.getJobs([...states])));
  return jobs.flat().flatMap((job) => job.data.events.map((event) => event.id as string));
}

beforeAll(async () => {
  db = await createTestDatabase("outages");
  project = await createTestProject(db.sql);
  await postgresProxy.start();
  await redisProxy.start();
  const config = testConfig(viaProxy(db.url, postgresProxy.port), queue.prefix, {
    redisUrl: `redis://127.0.0.1:${redisProxy.port}`,
    redisFailoverHoldMs: REDIS_HOLD_MS,
  });
  gateway = await startGateway(config, testLogger("outages"));
});

afterAll(async () => {
  await postgresProxy.restore();
  await redisProxy.restore();
  await gateway.stop();
  await postgresProxy.cut();
  await redisProxy.cut();
  await queue.cleanup();
  await db.drop();
});

describe("Redis unreachable at enqueue", () => {
  it("holds an identify while Redis is away for less than REDIS_FAILOVER_HOLD_MS, and answers 200 once it is back", async () => {
    expect((await track({ id: "before-held-outage" })).status).toBe(200);
    await redisProxy.cut();
    const held = track({ id: "held-through-outage" });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await redisProxy.restore();
    expect(await held).toEqual({ status: 200, body: { status: 200, message: "Success." } });
    expect(await queuedEventIds()).toContain("held-through-outage");
  });

  it("answers 503 with Retry-After past the hold, never 200 or 500, then recovers when Redis is back", async () => {
    expect((await track({ id: "before-outage" })).status).toBe(200);

    await redisProxy.cut();
    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => track({ id: `during-outage-${i}` })));
    for (const reply of replies) {
      expect(reply).toEqual({
        status: 503,
        body: { status: 503, message: "Service Unavailable" },
        retryAfter: "5",
      });
    }
    const ready = await fetch(`${gateway.url}/readyz`);
    expect(ready.status).toBe(503);

    await redisProxy.restore();
    await waitFor("identify accepted again", async () =>
      (await track({ id: "after-outage" })).status === 200 ? true : undefined,
    );
    const queued = await queuedEventIds();
    expect(queued).toContain("before-outage");
    expect(queued).toContain("after-outage");
  });
});

describe("Postgres unreachable", () => {
  it("keeps accepting identifies whose auth_token verdict is cached", async () => {
    expect((await readProfile("nobody")).status).toBe(404);
    await postgresProxy.cut();
    try {
      expect((await track({ id: "while-postgres-down" })).status).toBe(200);
    } finally {
      await postgresProxy.restore();
    }
  });

  it("answers 503 with Retry-After for an API key it has not checked before, and 500 for an unchecked auth_token", async () => {
    const freshKey = await project.keyWith(["profile:read"]);
    const freshToken = await createTestProject(db.sql, "other").then((other) => other.authToken);
    await postgresProxy.cut();
    try {
      const reply = await readProfile("someone", freshKey);
      expect(reply).toEqual({ status: 503, body: { error: "unavailable" }, retryAfter: "5" });
      const identify = await fetch(`${gateway.url}/api/v2/users/track?auth_token=${freshToken}`, {
        method: "POST",
        body: JSON.stringify({ id: "x" }),
      });
      expect(identify.status).toBe(500);
      expect(await identify.json()).toEqual({ status: 500, message: "An error occurred with our API" });
    } finally {
      await postgresProxy.restore();
    }
    expect((await readProfile("someone", freshKey)).status).toBe(404);
  });
});
