import { Redis, type RedisOptions } from "ioredis";

/**
 * Producers fail fast while Redis is away, so a request gets its 500 at once instead of
 * waiting in an offline queue; consumers (BullMQ workers) must retry forever instead.
 */
export function producerConnection(redisUrl: string): Redis {
  return new Redis(redisUrl, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 5_000,
    connectTimeout: 5_000,
  } satisfies RedisOptions);
}

export function consumerConnection(redisUrl: string): Redis {
  return new Redis(redisUrl, { maxRetriesPerRequest: null, connectTimeout: 5_000 });
}
