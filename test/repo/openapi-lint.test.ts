import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openApiDocument } from "../../apps/gateway/src/openapi/document";

const root = resolve(import.meta.dirname, "../..");

interface SpectralResult {
  code: string;
  message: string;
  path: string[];
  /** 0 error, 1 warning, 2 information, 3 hint. */
  severity: number;
}

describe("the OpenAPI document the gateway serves", () => {
  const folder = mkdtempSync(join(tmpdir(), "cm-openapi-lint-"));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  it("passes Spectral's OpenAPI ruleset (.spectral.yaml) with no error and no warning", () => {
    const file = join(folder, "openapi.json");
    writeFileSync(file, JSON.stringify(openApiDocument));
    const lint = spawnSync(
      join(root, "node_modules/.bin/spectral"),
      ["lint", "--ruleset", join(root, ".spectral.yaml"), "--format", "json", "--quiet", file],
      { cwd: root, encoding: "utf8" },
    );
    const results = JSON.parse(lint.stdout) as SpectralResult[];
    const findings = results
      .filter((result) => result.severity <= 1)
      .map((result) => `${result.code} at ${result.path.join(".")}: ${result.message}`);
    expect(findings).toEqual([]);
  });
});
