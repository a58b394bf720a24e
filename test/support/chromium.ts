import { existsSync } from "node:fs";

/** The Chromium the browser tests drive (Debian's by default). */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/**
 * Browser tests run where Chromium is, and are skipped elsewhere (global-setup.ts says so in one
 * line); CI installs it and must run them.
 */
export const chromiumPresent = existsSync(CHROMIUM);
