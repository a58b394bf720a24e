import { execFileSync } from "node:child_process";
import { Redis } from "ioredis";
import { DURABLE_REDIS, freePort, startPrivateRedis, type PrivateRedis } from "./private-redis";
import { waitFor } from "./wait";

/**
 * A Redis Cluster of a test's own: three primaries and a replica each, private redis-servers on
 * loopback ports (their cluster buses on ports of their own), with the settings
 * docs/operations-redis.md requires and a node timeout of one second, so that a primary killed
 * is replaced by its replica within seconds.
 */
export interface PrivateCluster {
  nodes: PrivateRedis[];
  /** `host:port` of every node, as REDIS_CLUSTER_NODES names them. */
  addresses: { host: string; port: number }[];
  /** The node serving `key`'s slot now, as the node at `askedPort` sees the cluster. */
  primaryOf(key: string, askedPort?: number): Promise<PrivateRedis>;
  /** Once every node (all must run) sees every slot served, and each primary has its replica in sync. */
  settled(): Promise<void>;
  stop(): Promise<void>;
}

const NODE_TIMEOUT_MS = 1_000;

/** One command to the node at `port`, on a connection of its own. */
async function ask(port: number, command: string, ...args: string[]): Promise<unknown> {
  const client = new Redis(port, "127.0.0.1", { maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on("error", () => {});
  try {
    return await client.call(command, ...args);
  } finally {
    client.disconnect();
  }
}

async function startNode(): Promise<PrivateRedis> {
  const busPort = await freePort();
  return startPrivateRedis([
    ...DURABLE_REDIS,
    ...["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"],
    ...["--cluster-node-timeout", String(NODE_TIMEOUT_MS), "--cluster-port", String(busPort)],
  ]);
}

export async function startPrivateCluster(): Promise<PrivateCluster> {
  const nodes: PrivateRedis[] = [];
  for (let n = 0; n < 6; n += 1) nodes.push(await startNode());
  execFileSync(
    "redis-cli",
    [
      "--cluster",
      "create",
      ...nodes.map((node) => `127.0.0.1:${node.port}`),
      "--cluster-replicas",
      "1",
      "--cluster-yes",
    ],
    { stdio: "ignore" },
  );
  const cluster: PrivateCluster = {
    nodes,
    addresses: nodes.map((node) => ({ host: "127.0.0.1", port: node.port })),
    async primaryOf(key, askedPort = nodes[0]!.port) {
      const slot = (await ask(askedPort, "CLUSTER", "KEYSLOT", key)) as number;
      const ranges = (await ask(askedPort, "CLUSTER", "SLOTS")) as [number, number, [string, number]][];
      const port = ranges.find(([first, last]) => first <= slot && slot <= last)?.[2][1];
      return nodes.find((node) => node.port === port)!;
    },
    async settled() {
      await waitFor(
        "the cluster to serve every slot, each primary with a replica in sync",
        async () => {
          for (const node of nodes) {
            const info = (await ask(node.port, "CLUSTER", "INFO").catch(() => "")) as string;
            if (!info.includes("cluster_state:ok")) return undefined;
            const replication = (await ask(node.port, "INFO", "replication")) as string;
            if (replication.includes("role:master") && !/^slave0:.*state=online/m.test(replication)) return undefined;
          }
          return true;
        },
        60_000,
      );
    },
    async stop() {
      await Promise.all(nodes.map((node) => node.stop()));
    },
  };
  await cluster.settled();
  return cluster;
}
