import { createServer, type Server } from "node:http";
import { probeDependencies } from "@cm/config";
import { checkRedisReady, type RedisDurabilityMode, type RedisConnection } from "@cm/queue";
import type { AddressInfo } from "node:net";
import type { Sql } from "@cm/db";
import type { Registry } from "prom-client";

export interface HealthServer {
  server: Server;
  port: number;
}

/**
 * A worker has no API, only probes and metrics: /healthz (alive), /readyz (Postgres reachable,
 * Redis reachable with room and, where required, durable; not stopping; and, whatever its status,
 * how many jobs wait to be tried again, by cause) and /metrics (Prometheus).
 */
export async function startHealthServer(
  port: number,
  deps: {
    sql: Sql;
    redis: RedisConnection;
    registry: Registry;
    readiness: { accepting: boolean };
    redisDurability: RedisDurabilityMode;
    waitingOnRetry: () => Record<string, number>;
  },
): Promise<HealthServer> {
  const server = createServer((req, res) => {
    const reply = (status: number, body: string, type = "application/json") => {
      res.writeHead(status, { "content-type": type });
      res.end(body);
    };
    if (req.url === "/healthz") return reply(200, '{"status":"ok"}');
    if (req.url === "/metrics") {
      deps.registry.metrics().then(
        (text) => reply(200, text, deps.registry.contentType),
        () => reply(500, "{}"),
      );
      return;
    }
    if (req.url === "/readyz") {
      probeDependencies({
        postgres: () => deps.sql`SELECT 1`,
        redis: () => checkRedisReady(deps.redis, deps.redisDurability),
      }).then(({ postgres, redis }) => {
        const ready = deps.readiness.accepting && postgres === "ok" && redis === "ok";
        reply(
          ready ? 200 : 503,
          JSON.stringify({
            status: ready ? "ready" : "not_ready",
            accepting: deps.readiness.accepting,
            postgres,
            redis,
            jobs_waiting_on_retry: deps.waitingOnRetry(),
          }),
        );
      });
      return;
    }
    reply(404, '{"error":"not_found"}');
  });
  await new Promise<void>((resolve) => server.listen(port, resolve));
  return { server, port: (server.address() as AddressInfo).port };
}
