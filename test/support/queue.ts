import { Redis } from "ioredis";
import { REDIS_URL, uniqueName } from "./env";

/** A queue prefix of its own for one test file, and a way to remove its keys afterwards. */
export function createTestQueuePrefix(label: string): { prefix: string; cleanup(): Promise<void> } {
  const prefix = uniqueName(`cmtest_${label}`);
  return {
    prefix,
    async cleanup() {
      const redis = new Redis(REDIS_URL);
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    },
  };
}
