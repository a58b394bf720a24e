import { redisMemoryUse, isRedisOutOfMemory, type RedisConnection } from "@cm/queue";
import type { Worker } from "bullmq";
import type { Logger } from "pino";

const CHECK_EVERY_MS = 1_000;

/**
 * BullMQ fetches the next job again at once when the error is not a connection error, so at
 * maxmemory (every write refused with OOM) each worker spun at full CPU and wrote ~25k log
 * lines a second. On such an error the workers pause, and resume once Redis has room again:
 * as soon as it is below maxmemory, since finishing jobs is what frees it. Meanwhile readiness
 * is red (probes see Redis past 95% of maxmemory).
 */
export function pauseWhileRedisIsFull(
  workers: Worker[],
  redis: RedisConnection,
  logger: Logger,
): (error: Error) => void {
  let paused = false;
  const resumeWhenRoom = async () => {
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, CHECK_EVERY_MS));
      const use = await redisMemoryUse(redis).catch(() => 1);
      if (use < 1) break;
    }
    for (const worker of workers) worker.resume();
    paused = false;
    logger.info("Redis has room again: workers resumed");
  };
  return (error) => {
    if (paused || !isRedisOutOfMemory(error)) return;
    paused = true;
    logger.warn("Redis is at maxmemory: workers paused until it has room");
    void Promise.all(workers.map((worker) => worker.pause(true))).then(resumeWhenRoom);
  };
}
