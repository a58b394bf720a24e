import { spawn } from "node:child_process";
import { closeSync, mkdirSync, openSync } from "node:fs";
import { connect } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import type { LocalServer } from "./local-server";

const READY_TIMEOUT_MS = 30_000;
/** What REDIS_DURABILITY requires (docs/operations-redis.md): nothing accepted is lost or evicted. */
const DURABLE = ["--appendonly", "yes", "--appendfsync", "everysec", "--maxmemory-policy", "noeviction"];
/** Throw-away data (a test run's): nothing written to disk. */
const THROWAWAY = ["--appendonly", "no", "--save", ""];

/** Whether it answers PING: it takes connections while it loads its data, and answers -LOADING then. */
function pong(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port, timeout: 1000 });
    const settle = (answered: boolean) => {
      socket.destroy();
      resolve(answered);
    };
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.once("data", (reply) => settle(reply.toString().startsWith("+PONG")));
    socket.once("error", () => settle(false));
    socket.once("timeout", () => settle(false));
  });
}

/**
 * Starts redis-server from PATH on 127.0.0.1:`port`, durable, its data (the append-only file)
 * in `dir`. It runs in a process group of its own, which a Ctrl-C in the terminal does not
 * reach: the caller stops it, after what uses it. `durable: false` keeps nothing on disk.
 */
export async function startLocalRedis(
  dir: string,
  port: number,
  logFile: string,
  { durable = true } = {},
): Promise<LocalServer> {
  mkdirSync(dir, { recursive: true });
  const log = openSync(logFile, "a");
  const persistence = durable ? DURABLE : THROWAWAY;
  const server = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, ...persistence], {
    detached: true,
    stdio: ["ignore", log, log],
  });
  closeSync(log);
  const exited = new Promise<void>((resolve) => server.once("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    server.once("spawn", resolve);
    server.once("error", (error: NodeJS.ErrnoException) =>
      reject(
        error.code === "ENOENT"
          ? new Error(
              "redis-server is not on PATH: install Redis (apt-get install redis-server, or brew install redis), or set REDIS_URL",
            )
          : error,
      ),
    );
  });
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!(await pong(port))) {
    if (server.exitCode !== null || Date.now() > deadline) {
      server.kill("SIGKILL");
      throw new Error(`redis-server did not start on port ${port}: its output is in ${logFile}`);
    }
    await sleep(100);
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      // SIGTERM: Redis flushes its append-only file, then exits.
      server.kill("SIGTERM");
      await exited;
    },
  };
}
