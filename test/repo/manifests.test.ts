import { readdirSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const packages = ["apps", "libs"].flatMap((group) =>
  readdirSync(join(root, group)).map((name) => join(root, group, name)),
);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith(".ts")
        ? [join(dir, entry.name)]
        : [],
  );
}

/** `@scope/name/sub` and `name/sub` are imports of the package `@scope/name` and `name`. */
function packageOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] as string);
}

/** What a package's sources import, by package name: static, type-only and dynamic imports alike, and files resolved from a package. */
function importedPackages(dir: string): string[] {
  const found = new Set<string>();
  for (const file of sourceFiles(join(dir, "src"))) {
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+|require\.resolve\(\s*)"([^".][^"]*)"/g)) {
      const specifier = match[1] as string;
      if (specifier.startsWith("node:") || builtinModules.includes(specifier)) continue;
      found.add(packageOf(specifier));
    }
  }
  return [...found].sort();
}

describe("package manifests", () => {
  it.each(packages.map((dir) => [dir.slice(root.length + 1), dir]))(
    "%s declares exactly the packages its sources import",
    (_name, dir) => {
      const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
        dependencies?: Record<string, string>;
      };
      expect(Object.keys(manifest.dependencies ?? {}).sort()).toEqual(importedPackages(dir));
    },
  );
});
