import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const script = join(root, "scripts/check-import-cycles.mjs");

const check = (...folders: string[]) =>
  spawnSync(process.execPath, [script, ...folders], { cwd: root, encoding: "utf8" });

describe("scripts/check-import-cycles.mjs", () => {
  const fixture = mkdtempSync(join(tmpdir(), "cm-import-cycle-"));
  afterAll(() => rmSync(fixture, { recursive: true, force: true }));

  it("finds no import cycle in apps/*/src and libs/*/src", () => {
    const result = check();
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
  });

  it("fails on two files that import each other's types only", () => {
    writeFileSync(join(fixture, "a.ts"), 'import type { B } from "./b";\nexport interface A {\n  b?: B;\n}\n');
    writeFileSync(join(fixture, "b.ts"), 'import type { A } from "./a";\nexport interface B {\n  a?: A;\n}\n');
    writeFileSync(join(fixture, "c.ts"), 'import type { A } from "./a";\nexport type C = A;\n');
    const result = check(fixture);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/import cycle among 2 files: .*a\.ts, .*b\.ts\n/);
    expect(result.stderr).not.toMatch(/c\.ts/);
  });

  it("fails on a cycle closed by an export from", () => {
    writeFileSync(join(fixture, "a.ts"), 'export * from "./b";\nexport const a = 1;\n');
    writeFileSync(join(fixture, "b.ts"), 'export type { A } from "./c";\nexport const b = 2;\n');
    writeFileSync(join(fixture, "c.ts"), 'import { a } from "./a";\nexport type A = typeof a;\n');
    const result = check(fixture);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/import cycle among 3 files/);
  });
});
