import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RedisSentinelSettings } from "@cm/config";
import { Redis } from "ioredis";
import { DURABLE_REDIS, freePort, startPrivateRedis, type PrivateRedis } from "./private-redis";
import { TcpProxy } from "./tcp-proxy";
import { waitFor } from "./wait";

/**
 * A replicated Redis of a test's own, as docs/operations-redis.md runs it: a primary, a replica
 * and three Sentinels, every one a redis-server on a loopback port of its own (the shared Redis
 * is never touched). The replica reaches the primary through `link`, a proxy that can hold what
 * the primary sends it: a replication link that lags, as a busy replica or a slow network makes it.
 */
export interface ReplicatedRedis {
  primary: PrivateRedis;
  replica: PrivateRedis;
  link: TcpProxy;
  /** What gateways and workers are given (REDIS_SENTINELS, REDIS_SENTINEL_NAME). */
  sentinel: RedisSentinelSettings;
  /** The port of the server the Sentinels name as the primary. */
  primaryPort(): Promise<number>;
  stop(): Promise<void>;
}

const NAME = "cm";
const SENTINELS = 3;

/** A Sentinel (or a server) reached directly, for its view of the primary; quiet while it is away. */
function sentinelClient(port: number): Redis {
  const client = new Redis({ port, host: "127.0.0.1", maxRetriesPerRequest: 1, retryStrategy: () => 200 });
  client.on("error", () => {});
  return client;
}

async function startSentinel(dir: string, primaryPort: number): Promise<{ port: number; process: ChildProcess }> {
  const port = await freePort();
  const config = join(dir, `sentinel-${port}.conf`);
  // A primary unanswered for a second is down for this Sentinel; two of the three agreeing fail it
  // over. The long failover timeout keeps the Sentinels from "fixing" the replica, which they
  // know at the primary's address but which replicates from the link's.
  writeFileSync(
    config,
    [
      `port ${port}`,
      "bind 127.0.0.1",
      `dir ${dir}`,
      `sentinel monitor ${NAME} 127.0.0.1 ${primaryPort} 2`,
      `sentinel down-after-milliseconds ${NAME} 1000`,
      `sentinel failover-timeout ${NAME} 120000`,
      "",
    ].join("\n"),
  );
  const process = spawn("redis-server", [config, "--sentinel"], { stdio: "ignore" });
  const client = sentinelClient(port);
  await waitFor(`Sentinel on port ${port}`, () =>
    client.ping().then(
      () => true,
      () => undefined,
    ),
  );
  client.disconnect();
  return { port, process };
}

export async function startReplicatedRedis(): Promise<ReplicatedRedis> {
  const primary = await startPrivateRedis(DURABLE_REDIS);
  const link = new TcpProxy("127.0.0.1", primary.port);
  await link.start();
  const replica = await startPrivateRedis([...DURABLE_REDIS, "--replicaof", "127.0.0.1", String(link.port)]);
  const dir = mkdtempSync(join(tmpdir(), "cm-test-sentinels-"));
  const sentinels = await Promise.all(Array.from({ length: SENTINELS }, () => startSentinel(dir, primary.port)));
  const clients = sentinels.map(({ port }) => sentinelClient(port));
  const admin = sentinelClient(primary.port);
  await waitFor("the replica in sync", async () =>
    /^slave0:.*state=online/m.test(await admin.info("replication")) ? true : undefined,
  );
  admin.disconnect();
  // Each Sentinel must know the replica and the two others, or there is no quorum to fail over.
  await waitFor(
    "every Sentinel knowing the replica and the others",
    async () => {
      const views = await Promise.all(
        clients.map(async (client) => {
          const fields = (await client.call("SENTINEL", "MASTER", NAME)) as string[];
          return Object.fromEntries(fields.flatMap((_, i) => (i % 2 === 0 ? [[fields[i], fields[i + 1]]] : [])));
        }),
      );
      return views.every((view) => view["num-slaves"] === "1" && view["num-other-sentinels"] === String(SENTINELS - 1))
        ? true
        : undefined;
    },
    30_000,
  );

  return {
    primary,
    replica,
    link,
    sentinel: { sentinels: sentinels.map(({ port }) => ({ host: "127.0.0.1", port })), name: NAME },
    async primaryPort() {
      const [, port] = (await (clients[0] as Redis).call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", NAME)) as string[];
      return Number(port);
    },
    async stop() {
      for (const client of clients) client.disconnect();
      for (const sentinel of sentinels) sentinel.process.kill("SIGKILL");
      await link.cut();
      await Promise.all([primary.stop(), replica.stop()]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
