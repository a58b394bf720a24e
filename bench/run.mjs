// Runs every benchmark one after another (they must not share the machine), then writes their
// result tables into docs/performance.md between the bench markers.
// Usage: npm run build && npm run bench   (or: npm run bench -- identify journeys)
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { ROOT } from "./lib.mjs";

const ALL = [
  "identify",
  "events",
  "changes",
  "webhook-fairness",
  "batch",
  "replicas",
  "intake-log",
  "shards",
  "tracking-spec",
  "import",
  "memory",
  "topics",
  "journeys",
  "profile-list",
  "write-cost",
  "scale",
];
const chosen = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ALL;

const START = "<!-- bench:start -->";
const END = "<!-- bench:end -->";
const DOCS = join(ROOT, "docs");
const pagePath = join(DOCS, "performance.md");
// Checked before the benchmarks run, not after their minutes.
const pageBefore = readFileSync(pagePath, "utf8");
if (!pageBefore.includes(START) || !pageBefore.includes(END)) throw new Error(`${pagePath} has lost its bench markers`);

for (const name of chosen) {
  console.error(`\n== bench/${name}.mjs`);
  execFileSync(process.execPath, [join(ROOT, "bench", `${name}.mjs`)], { stdio: "inherit" });
}

/** The tables' links are written from the repository's root; the page is one level down. */
const fromDocs = (markdown) =>
  markdown.replace(
    /\]\((?![a-z][a-z0-9+.-]*:|#|\/)([^)#\s]+)(#[^)\s]*)?\)/gi,
    (_, path, anchor = "") => `](${relative(DOCS, join(ROOT, path))}${anchor})`,
  );

const page = readFileSync(pagePath, "utf8");
const tables = ALL.map((name) => readFileSync(join(ROOT, "bench", "results", `${name}.md`), "utf8").trim()).join(
  "\n\n",
);
const before = page.slice(0, page.indexOf(START) + START.length);
const after = page.slice(page.indexOf(END));
writeFileSync(pagePath, `${before}\n${fromDocs(tables)}\n${after}`);
console.error("docs/performance.md benchmark tables updated");
