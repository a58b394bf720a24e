import { probeDependencies } from "@cm/config";
import { checkRedisReady } from "@cm/queue";
import type Router from "@koa/router";
import type { Health, Observability, Postgres } from "../deps";

/**
 * /healthz: the process answers. /readyz: it can take traffic (Postgres reachable, Redis
 * reachable with room and, where required, durable and replicated; not stopping). /metrics: Prometheus text.
 */
export function healthRoutes(router: Router, deps: Postgres & Health & Observability): void {
  router.get("/healthz", (ctx) => {
    ctx.body = { status: "ok" };
  });

  router.get("/metrics", async (ctx) => {
    ctx.type = deps.metrics.registry.contentType;
    ctx.body = await deps.metrics.registry.metrics();
  });

  router.get("/readyz", async (ctx) => {
    const { postgres, redis } = await probeDependencies({
      postgres: () => deps.sql`SELECT 1`,
      redis: () => checkRedisReady(deps.redis, deps.redisDurability, deps.redisReplicasAck),
    });
    const ready = deps.readiness.accepting && postgres === "ok" && redis === "ok";
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? "ready" : "not_ready", accepting: deps.readiness.accepting, postgres, redis };
  });
}
