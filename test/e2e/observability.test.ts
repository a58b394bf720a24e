import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EVENTS_QUEUE, PROFILE_OPERATIONS_QUEUE, queueName, TOPIC_FANOUT_QUEUE, WEBHOOKS_QUEUE } from "@cm/queue";
import type { RunningWorker } from "@cm/worker";
import { TEST_SHARDS } from "../support/env";
import { createTestStack, type TestStack } from "../support/services";
import { waitFor } from "../support/wait";

const ADMIN_TOKEN = "admin-token-for-tests-0123456789";
let stack: TestStack;
/** A queue's name in this test mode (on a Redis Cluster, a hash tag), and the intake's shards. */
const queueNamed = (base: string, shard = 0) => queueName(base, stack.config.redisCluster !== undefined, shard);
const shards = Array.from({ length: TEST_SHARDS }, (_, shard) => shard);
let base: string;
let worker: RunningWorker;

async function text(url: string, headers: Record<string, string> = {}) {
  const response = await fetch(url, { headers });
  return { status: response.status, body: await response.text(), headers: response.headers };
}

function metricValue(metrics: string, line: RegExp): number {
  const found = metrics.split("\n").find((l) => line.test(l));
  return found === undefined ? Number.NaN : Number(found.split(" ").pop());
}

beforeAll(async () => {
  stack = await createTestStack("observability", { adminToken: ADMIN_TOKEN });
  base = (await stack.gateway()).url;
  worker = await stack.worker();
  const tracked = await fetch(`${base}/api/v2/users/track?auth_token=${stack.project.authToken}`, {
    method: "POST",
    body: JSON.stringify({ id: "metrics-user", email: "metrics@example.com" }),
  });
  expect(tracked.status).toBe(200);
  await fetch(`${base}/api/v2/users/track?auth_token=wrong`, { method: "POST", body: "{}" });
});
afterAll(() => stack.close());

describe("gateway /metrics", () => {
  it("counts requests by route pattern and status, batch sizes, and queue depth per state", async () => {
    const { status, body, headers } = await text(`${base}/metrics`);
    expect(status).toBe(200);
    expect(headers.get("content-type")).toMatch(/text\/plain/);
    expect(
      metricValue(
        body,
        /^http_request_duration_seconds_count\{method="POST",route="\/api\/v2\/users\/track",status="200"\}/,
      ),
    ).toBeGreaterThanOrEqual(1);
    expect(
      metricValue(
        body,
        /^http_request_duration_seconds_count\{method="POST",route="\/api\/v2\/users\/track",status="401"\}/,
      ),
    ).toBeGreaterThanOrEqual(1);
    expect(metricValue(body, /^identify_enqueue_batch_size_count/)).toBeGreaterThanOrEqual(1);
    expect(body).toContain(`bullmq_queue_jobs{queue="${queueNamed(PROFILE_OPERATIONS_QUEUE)}",state="waiting"} `);
    expect(body).toContain(`bullmq_queue_jobs{queue="${queueNamed(TOPIC_FANOUT_QUEUE)}",state="failed"} `);
    expect(body).toContain("process_cpu_seconds_total");
  });
});

describe("request ids", () => {
  const track = (authToken: string, headers: Record<string, string> = {}) =>
    fetch(`${base}/api/v2/users/track?auth_token=${authToken}`, {
      method: "POST",
      headers,
      body: JSON.stringify({ id: "request-id-user" }),
    });

  it("names error answers by the proxy's request id, or by one made for them", async () => {
    expect((await track("wrong", { "x-request-id": "proxy-id-42" })).headers.get("x-request-id")).toBe("proxy-id-42");
    const made = [
      (await track("wrong")).headers.get("x-request-id"),
      (await track("wrong")).headers.get("x-request-id"),
    ];
    expect(made).toEqual([expect.stringMatching(/^[0-9a-f-]{36}$/), expect.stringMatching(/^[0-9a-f-]{36}$/)]);
    expect(made[0]).not.toBe(made[1]);
  });

  it("leaves successful answers unnamed", async () => {
    const reply = await track(stack.project.authToken, { "x-request-id": "proxy-id-43" });
    expect(reply.status).toBe(200);
    expect(reply.headers.get("x-request-id")).toBeNull();
  });
});

describe("worker probes and /metrics", () => {
  it("answers /healthz and /readyz, and reports batches applied and end-to-end lag", async () => {
    expect((await text(`${worker.healthUrl}/healthz`)).status).toBe(200);
    expect((await text(`${worker.healthUrl}/readyz`)).status).toBe(200);
    const metrics = await waitFor("the identify to be applied", async () => {
      const { body } = await text(`${worker.healthUrl}/metrics`);
      return metricValue(body, /^identify_events_applied_total /) >= 1 ? body : undefined;
    });
    expect(metricValue(metrics, /^identify_batch_apply_seconds_count /)).toBeGreaterThanOrEqual(1);
    expect(metricValue(metrics, /^identify_end_to_end_lag_seconds_count /)).toBeGreaterThanOrEqual(1);
  });

  it("reports fan-out progress per topic", async () => {
    const topic = await stack.project.topic("Progress", "subscribed");
    await waitFor("the profile", async () =>
      (await text(`${base}/api/v2/users/metrics-user`, { authorization: stack.project.apiKey })).status === 200
        ? true
        : undefined,
    );
    const patched = await fetch(`${base}/api/v2/topics/${topic}`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${stack.project.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ default_status: "unsubscribed" }),
    });
    expect(patched.status).toBe(200);
    await waitFor("fan-out progress", async () => {
      const { body } = await text(`${worker.healthUrl}/metrics`);
      return metricValue(body, new RegExp(`^topic_fanout_profiles_total\\{topic="${topic}"\\} `)) >= 1
        ? true
        : undefined;
    });
  });
});

describe("queue dashboard /admin/queues", () => {
  it("refuses requests without the admin token", async () => {
    for (const headers of [
      {},
      { authorization: "Bearer not-the-token" },
      { authorization: `Bearer ${stack.project.apiKey}` },
    ]) {
      const reply = await text(`${base}/admin/queues`, headers);
      expect(reply.status).toBe(401);
      expect(reply.headers.get("www-authenticate")).toMatch(/Basic/);
    }
    expect((await text(`${base}/admin/queues/api/queues`)).status).toBe(401);
  });

  it("serves the dashboard and its API with the admin token (Bearer or Basic)", async () => {
    const page = await text(`${base}/admin/queues`, { authorization: `Bearer ${ADMIN_TOKEN}` });
    expect(page.status).toBe(200);
    expect(page.body).toMatch(/<html/i);
    const basic = Buffer.from(`admin:${ADMIN_TOKEN}`).toString("base64");
    const api = await text(`${base}/admin/queues/api/queues`, { authorization: `Basic ${basic}` });
    expect(api.status).toBe(200);
    expect(
      JSON.parse(api.body)
        .queues.map((q: { name: string }) => q.name)
        .sort(),
    ).toEqual(
      [
        ...shards.flatMap((shard) => [queueNamed(EVENTS_QUEUE, shard), queueNamed(PROFILE_OPERATIONS_QUEUE, shard)]),
        queueNamed(TOPIC_FANOUT_QUEUE),
        queueNamed(WEBHOOKS_QUEUE),
      ].sort(),
    );
  });
});
