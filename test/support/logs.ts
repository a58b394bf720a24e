import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { createLogger } from "@cm/config";
import pino, { type Logger } from "pino";
import { inject } from "vitest";

/** A debug-level logger writing where the end-of-run log scan looks (test/support/global-setup.ts). */
export function testLogger(label: string): Logger {
  const destination = pino.destination({ dest: join(inject("logDir"), `${label}.log`), sync: true, append: true });
  return createLogger(label, "debug", destination);
}

/** Keeps what a child process printed for the end-of-run log scan. */
export function keepChildLog(label: string, output: string): void {
  appendFileSync(join(inject("logDir"), `${label}.child.log`), output);
}
