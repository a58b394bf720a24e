import { Cluster, Redis, type RedisOptions } from "ioredis";
import type { RedisConnection } from "@cm/queue";
import { REDIS_CLUSTER, REDIS_CLUSTER_NODES, REDIS_URL } from "./env";

/**
 * A connection of a test's own to the test Redis: the shared server, or in TEST_REDIS=cluster the
 * test cluster (an ioredis Cluster, which sends each key's commands to the node serving it).
 */
export function testRedis(options: RedisOptions = {}): RedisConnection {
  if (!REDIS_CLUSTER) return new Redis(REDIS_URL, options);
  const nodes = REDIS_CLUSTER_NODES.split(",").map((node) => {
    const [host, port] = node.split(":");
    return { host: host!, port: Number(port) };
  });
  return new Cluster(nodes, { redisOptions: options });
}

/** Every key of the test Redis that matches `pattern` (KEYS on each primary of a cluster). */
export async function keysMatching(redis: RedisConnection, pattern: string): Promise<string[]> {
  if (!(redis instanceof Cluster)) return redis.keys(pattern);
  if (redis.status !== "ready") await new Promise((resolve) => redis.once("ready", resolve));
  const found = await Promise.all(redis.nodes("master").map((node) => node.keys(pattern)));
  return found.flat();
}
