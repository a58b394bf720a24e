import { execFileSync } from "node:child_process";
import { chownSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./private-redis";

/**
 * A Postgres of a test's own (own port and data folder, trust auth), for tests that stop it:
 * the shared one is never touched. Its programs run as the "postgres" system user when the
 * tests run as root, since Postgres refuses to run as root.
 */
export interface PrivatePostgres {
  url: string;
  /** Stops it at once, as a crash (`pg_ctl stop -m immediate`): recovery replays its WAL. */
  crash(): void;
  start(): void;
  stop(): void;
}

function binaries(): string {
  const versions = execFileSync("ls", ["/usr/lib/postgresql"], { encoding: "utf8" }).trim().split("\n").sort();
  return `/usr/lib/postgresql/${versions.at(-1)}/bin`;
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = binaries();
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "cm-test-pg-"));
  const asRoot = process.getuid?.() === 0;
  const postgresUser = asRoot ? Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" })) : undefined;
  if (postgresUser !== undefined) chownSync(dir, postgresUser, postgresUser);
  const run = (program: string, args: string[]) =>
    asRoot
      ? execFileSync("runuser", ["-u", "postgres", "--", join(bin, program), ...args], { stdio: "ignore" })
      : execFileSync(join(bin, program), args, { stdio: "ignore" });
  const data = join(dir, "data");
  run("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync"]);
  const start = () =>
    run("pg_ctl", [
      "-D",
      data,
      "-w",
      "-l",
      join(dir, "log"),
      "-o",
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      "start",
    ]);
  start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    crash: () => run("pg_ctl", ["-D", data, "-w", "-m", "immediate", "stop"]),
    start,
    stop() {
      run("pg_ctl", ["-D", data, "-w", "-m", "fast", "stop"]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
