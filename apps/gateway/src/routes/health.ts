import type Router from "@koa/router";
import type { GatewayDeps } from "../deps";

const PROBE_TIMEOUT_MS = 2_000;

function withTimeout<T>(work: Promise<T>): Promise<T> {
  return Promise.race([
    work,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error("probe timed out")), PROBE_TIMEOUT_MS).unref()),
  ]);
}

/**
 * /healthz: the process answers. /readyz: it can take traffic (Postgres and Redis reachable,
 * not stopping). /metrics: Prometheus text.
 */
export function healthRoutes(router: Router, deps: GatewayDeps): void {
  router.get("/healthz", (ctx) => {
    ctx.body = { status: "ok" };
  });

  router.get("/metrics", async (ctx) => {
    ctx.type = deps.metrics.registry.contentType;
    ctx.body = await deps.metrics.registry.metrics();
  });

  router.get("/readyz", async (ctx) => {
    const checks = await Promise.allSettled([withTimeout(deps.sql`SELECT 1`), withTimeout(deps.redis.ping())]);
    const [postgres, redis] = checks.map((check) => (check.status === "fulfilled" ? "ok" : "unreachable"));
    const ready = deps.readiness.accepting && postgres === "ok" && redis === "ok";
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? "ready" : "not_ready", accepting: deps.readiness.accepting, postgres, redis };
  });
}
