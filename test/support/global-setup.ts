import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { chromiumPresent, CHROMIUM } from "./chromium";

// Every gateway, worker and ctl a test starts logs at debug level into one folder per run;
// when the run ends, the folder is searched for anything that must never be logged.
const SECRET_PATTERNS: [string, RegExp][] = [
  ["an auth token or API key", /cm[tk]_\d+_[A-Za-z0-9_-]{20,}/],
  ["an email address", /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/],
  ["a webhook signing secret", /whsec_[A-Za-z0-9+/]{20,}/],
];

declare module "vitest" {
  export interface ProvidedContext {
    logDir: string;
  }
}

export default function setup(project: TestProject) {
  if (!chromiumPresent) {
    if (process.env.CI) throw new Error(`CI runs the browser tests, and there is no Chromium at ${CHROMIUM}`);
    console.warn(
      `browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH, to run them)`,
    );
  }
  const logDir = mkdtempSync(join(tmpdir(), "cm-test-logs-"));
  project.provide("logDir", logDir);
  return () => {
    const files = readdirSync(logDir);
    const leaks: string[] = [];
    let lines = 0;
    for (const file of files) {
      for (const line of readFileSync(join(logDir, file), "utf8").split("\n")) {
        if (line.trim() === "") continue;
        lines += 1;
        for (const [what, pattern] of SECRET_PATTERNS) {
          const found = pattern.exec(line);
          if (found) leaks.push(`${file}: ${what} (${found[0].slice(0, 12)}…) in: ${line.slice(0, 200)}`);
        }
      }
    }
    if (leaks.length > 0) {
      console.error(`FAIL log scan: secrets found in service logs:\n${leaks.slice(0, 20).join("\n")}`);
      process.exitCode = 1;
      return;
    }
    console.log(`log scan: ${lines} log lines from ${files.length} files, no token, key, secret or email`);
    rmSync(logDir, { recursive: true, force: true });
  };
}
