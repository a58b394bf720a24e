import { spawn, type ChildProcess } from "node:child_process";
import { basename, join } from "node:path";
import { keepChildLog } from "./logs";

export const ROOT = join(__dirname, "..", "..");

export interface ChildService {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/**
 * Runs a built entry point (apps/…/dist/…) as a real process, capturing what it prints; the
 * output joins the end-of-run log scan unless `scanLogs` is false (the launcher prints
 * credentials on purpose).
 */
export function startChild(script: string, env: NodeJS.ProcessEnv, args: string[] = [], scanLogs = true): ChildService {
  const child = spawn(process.execPath, [join(ROOT, script), ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
  // A test that fails before stopping its service must not leave it running, polling a queue
  // and a database that are gone, and taking CPU from every later test and benchmark.
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  child.once("exit", () => process.off("exit", killOnExit));
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => {
      if (scanLogs) keepChildLog(basename(script, ".js") + "-" + child.pid, output);
      resolve(code);
    }),
  );
  return { child, output: () => output, exited };
}

export interface CtlResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The ctl run to its end; `stdin`, when given, is what it reads on its standard input. */
export async function runCtl(env: NodeJS.ProcessEnv, args: string[], stdin?: string): Promise<CtlResult> {
  const child = spawn(process.execPath, [join(ROOT, "apps/ctl/dist/main.js"), ...args], {
    env,
    stdio: [stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
  });
  // A ctl that stops before reading all of it closes its end: EPIPE is no failure of the test.
  child.stdin?.on("error", () => undefined);
  child.stdin?.end(stdin);
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  return { code, stdout, stderr };
}
