import { createHash, randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { KeptDemoCredentials } from "./commands/demo";

/** What the launcher keeps between starts, per database: the demo's credentials and the dashboard's token. */
export interface LauncherStart extends KeptDemoCredentials {
  admin_token: string;
}

/**
 * The launcher's folder (git-ignored `.data/` at the repository root, or CM_DATA_DIR): its
 * state file, readable by its owner only since it holds credentials, the services' log, and the
 * key webhooks' signing secrets are sealed under.
 */
export class LauncherFolder {
  readonly logFile: string;
  private readonly stateFile: string;

  constructor(readonly path: string) {
    mkdirSync(path, { recursive: true });
    this.logFile = join(path, "services.log");
    this.stateFile = join(path, "launcher.json");
  }

  /** Starts are kept by a hash of the database URL, which may hold a password. */
  private static database(databaseUrl: string): string {
    return createHash("sha256").update(databaseUrl).digest("hex");
  }

  private readAll(): Record<string, LauncherStart> {
    try {
      return JSON.parse(readFileSync(this.stateFile, "utf8")) as Record<string, LauncherStart>;
    } catch {
      return {};
    }
  }

  lastStart(databaseUrl: string): LauncherStart | null {
    return this.readAll()[LauncherFolder.database(databaseUrl)] ?? null;
  }

  /**
   * The file of this folder's WEBHOOK_SECRET_KEY (32 random bytes in base64, its owner's only),
   * made at the first start: the secrets sealed under it open at every later one.
   */
  webhookSecretKeyFile(): string {
    const file = join(this.path, "webhook-secret.key");
    if (!existsSync(file)) writeFileSync(file, `${randomBytes(32).toString("base64")}\n`, { mode: 0o600, flag: "wx" });
    return file;
  }

  keepStart(databaseUrl: string, start: LauncherStart): void {
    const all = { ...this.readAll(), [LauncherFolder.database(databaseUrl)]: start };
    writeFileSync(this.stateFile, `${JSON.stringify(all, null, 2)}\n`, { mode: 0o600 });
    chmodSync(this.stateFile, 0o600);
  }
}
