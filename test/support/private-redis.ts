import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";

/**
 * A Redis of a test's own (its own port and data folder), for tests that kill it, fill it or
 * restart it: the shared Redis is never touched. Persistence and memory settings as given.
 */
export interface PrivateRedis {
  url: string;
  port: number;
  /** SIGKILL: no shutdown save, as a crash. */
  kill(): Promise<void>;
  /** Starts it again on the same port and data folder (it reloads its AOF), with these settings added. */
  start(more?: string[]): Promise<void>;
  /** SIGSTOP / SIGCONT: a stalled server, connections open, nothing answered. */
  pause(): void;
  resume(): void;
  admin(): Redis;
  stop(): Promise<void>;
}

/** The settings docs/operations-redis.md requires: nothing accepted is lost or evicted. */
export const DURABLE_REDIS = ["--appendonly", "yes", "--appendfsync", "everysec", "--maxmemory-policy", "noeviction"];

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export async function startPrivateRedis(settings: string[]): Promise<PrivateRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "cm-test-redis-"));
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | null = null;
  const clients: Redis[] = [];

  const start = async (more: string[] = []) => {
    child = spawn(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", ...settings, ...more],
      { stdio: "ignore" },
    );
    for (let tries = 0; tries < 100; tries += 1) {
      const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on("error", () => {});
      const up = await probe.connect().then(
        () => probe.ping().then(() => true),
        () => false,
      );
      probe.disconnect();
      if (up) return;
      await sleep(50);
    }
    throw new Error(`private Redis did not start on port ${port}`);
  };
  const kill = async () => {
    const running = child;
    if (running === null || running.exitCode !== null) return;
    const exited = new Promise((resolve) => running.once("exit", resolve));
    running.kill("SIGKILL");
    await exited;
    child = null;
  };

  await start();
  return {
    url,
    port,
    kill,
    start,
    pause: () => child?.kill("SIGSTOP"),
    resume: () => child?.kill("SIGCONT"),
    admin() {
      const client = new Redis(url, { maxRetriesPerRequest: null });
      clients.push(client);
      return client;
    },
    async stop() {
      for (const client of clients) client.disconnect();
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
