import { Command, type Cluster, type Redis } from "ioredis";

/** A connection to Redis: to one server (named, or found through Sentinels), or to a Redis Cluster's nodes. */
export type RedisConnection = Redis | Cluster;

export function isCluster(connection: RedisConnection): connection is Cluster {
  return connection.isCluster;
}

/**
 * The servers that take this connection's writes: the one server, or each primary of a cluster.
 * What a server's settings, memory and replicas must be holds for each of them. A cluster's are
 * known once it is ready: a consumer's connection waits for it, as its commands would; a
 * producer's fails at once, as its commands do.
 */
export async function primariesOf(connection: RedisConnection): Promise<Redis[]> {
  if (!isCluster(connection)) return [connection];
  if (connection.status !== "ready") {
    if (connection.options.enableOfflineQueue === false) throw new Error("the Redis Cluster is not connected");
    await new Promise((resolve) => connection.once("ready", resolve));
  }
  return connection.nodes("master");
}

/**
 * The cluster's connection to the primary serving `key`'s slot as the cluster last told it
 * (ioredis's own routing: the slot its Command computes, its table of slots); undefined while it
 * knows none.
 */
export function primaryServing(cluster: Cluster, key: string): Redis | undefined {
  const address = cluster.slots[new Command("get", [key]).getSlot()]?.[0];
  return cluster.nodes("all").find((node) => `${node.options.host}:${node.options.port}` === address);
}
