import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { ROOT } from "./processes";

/** The file naming the release before this one (a commit), which whoever cuts a release moves. */
export const PREVIOUS_RELEASE_FILE = join(ROOT, "test/compat/previous-release");

/** Where built releases are kept, one folder per commit (git-ignored, like all of .data/). */
const RELEASES = join(ROOT, ".data/releases");
/** Written last: a folder without it is a build that did not finish. */
const BUILT_MARK = ".built";

/** The commit the pin file names: its one line that is not a comment. */
export function previousRelease(): string {
  const lines = readFileSync(PREVIOUS_RELEASE_FILE, "utf8")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
  const [sha] = lines;
  if (lines.length !== 1 || sha === undefined || !/^[0-9a-f]{40}$/.test(sha)) {
    throw new Error(`${PREVIOUS_RELEASE_FILE} must name one commit (40 hex digits) besides its comments`);
  }
  return sha;
}

/** Runs a command to its end; rejects with the tail of what it printed when it fails. */
function run(command: string, args: string[], cwd: string): Promise<void> {
  // Settings of an `npm test` that started this run (npm_config_*) are not the release's.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("npm_")));
  const child = spawn(command, args, {
    cwd,
    env: { ...env, TURBO_TELEMETRY_DISABLED: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`${command} ${args.join(" ")} exited with ${code} in ${cwd}:\n${output.slice(-3000)}`)),
    );
  });
}

/**
 * The release of commit `sha`, installed and built as scripts/bootstrap.sh builds a clone, in
 * .data/releases/<sha>; built once and kept, so a later run starts at once. Taken with
 * `git archive`, which leaves the repository's work trees and index alone. Returns the folder,
 * relative to the repository's root (as startChild takes scripts).
 */
export async function builtRelease(sha: string): Promise<string> {
  const folder = join(RELEASES, sha);
  if (existsSync(join(folder, BUILT_MARK))) return relative(ROOT, folder);
  await run("git", ["cat-file", "-e", `${sha}^{commit}`], ROOT).catch(() => {
    throw new Error(
      `commit ${sha} (${PREVIOUS_RELEASE_FILE}) is not in this clone: fetch the history (git fetch --unshallow)`,
    );
  });
  // Built beside its place and moved there whole, so that two runs at once never share a half-built tree.
  const building = `${folder}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true });
  try {
    await run("bash", ["-c", 'set -o pipefail; git archive --format=tar "$0" | tar -x -C "$1"', sha, building], ROOT);
    await run("npm", ["ci", "--no-audit", "--no-fund"], building);
    await run("npx", ["--no-install", "ts-patch", "install", "-s"], building);
    await run(
      "npx",
      ["--no-install", "turbo", "run", "build", "--output-logs=errors-only", "--concurrency=2"],
      building,
    );
    writeFileSync(join(building, BUILT_MARK), `${sha}\n`);
    if (existsSync(join(folder, BUILT_MARK))) rmSync(building, { recursive: true, force: true });
    else {
      rmSync(folder, { recursive: true, force: true });
      renameSync(building, folder);
    }
  } catch (error) {
    rmSync(building, { recursive: true, force: true });
    throw error;
  }
  return relative(ROOT, folder);
}
