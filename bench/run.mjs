// Runs every benchmark one after another (they must not share the machine), then writes their
// result tables into the README between the bench markers.
// Usage: npm run build && npm run bench   (or: npm run bench -- identify journeys)
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./lib.mjs";

const ALL = [
  "identify",
  "events",
  "changes",
  "webhook-fairness",
  "batch",
  "replicas",
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

for (const name of chosen) {
  console.error(`\n== bench/${name}.mjs`);
  execFileSync(process.execPath, [join(ROOT, "bench", `${name}.mjs`)], { stdio: "inherit" });
}

const START = "<!-- bench:start -->";
const END = "<!-- bench:end -->";
const readmePath = join(ROOT, "README.md");
const readme = readFileSync(readmePath, "utf8");
const tables = ALL.map((name) => readFileSync(join(ROOT, "bench", "results", `${name}.md`), "utf8").trim()).join(
  "\n\n",
);
const before = readme.slice(0, readme.indexOf(START) + START.length);
const after = readme.slice(readme.indexOf(END));
writeFileSync(readmePath, `${before}\n${tables}\n${after}`);
console.error("README benchmark tables updated");
