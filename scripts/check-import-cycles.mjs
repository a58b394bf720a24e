// node scripts/check-import-cycles.mjs [DIR…]
// Fails on any import cycle among the TypeScript files under the folders given (default: every
// apps/*/src and libs/*/src). Every import counts, `import type` and `export … from` included: a
// cycle of types alone still ties its modules into one, and ESLint's import/no-cycle skips them.
// Specifiers are resolved as the compiler resolves them, so `@cm/domain` leads to its index.ts.
// Prints one cycle of each circle found and exits 1; exits 0 when there is none.
import { readdirSync, readFileSync, realpathSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import ts from "typescript";

const ROOT = resolve(import.meta.dirname, "..");

function defaultFolders() {
  return ["apps", "libs"].flatMap((group) =>
    readdirSync(join(ROOT, group), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => join(ROOT, group, entry.name, "src")),
  );
}

function typescriptFiles(dir) {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.(c|m)?ts$/.test(entry.name) && !entry.name.endsWith(".d.ts"))
    .map((entry) => realpathSync(join(entry.parentPath, entry.name)));
}

const options = { module: ts.ModuleKind.Node16, moduleResolution: ts.ModuleResolutionKind.Node16 };

/** The files among `files` that each one imports, resolved as the compiler resolves its specifiers. */
function importGraph(files) {
  const known = new Set(files);
  const graph = new Map();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    const targets = new Set();
    for (const { fileName: specifier } of importedFiles) {
      const resolved = ts.resolveModuleName(specifier, file, options, ts.sys).resolvedModule?.resolvedFileName;
      if (resolved === undefined) continue;
      const target = realpathSync(resolved);
      if (known.has(target)) targets.add(target);
    }
    graph.set(file, [...targets]);
  }
  return graph;
}

/** The strongly connected components of more than one file, or of one that imports itself (Tarjan). */
function circles(graph) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  let next = 0;
  const visit = (file) => {
    index.set(file, next);
    low.set(file, next);
    next++;
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file)) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file), low.get(target)));
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file), index.get(target)));
    }
    if (low.get(file) !== index.get(file)) return;
    const component = [];
    let member;
    do {
      member = stack.pop();
      onStack.delete(member);
      component.push(member);
    } while (member !== file);
    if (component.length > 1 || graph.get(file).includes(file)) found.push(component);
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

/** A shortest cycle through the first file of `component`, found breadth first within it. */
function cycleIn(graph, component) {
  const members = new Set(component);
  const start = [...component].sort()[0];
  const cameFrom = new Map();
  const queue = [start];
  while (queue.length > 0) {
    const file = queue.shift();
    for (const target of graph.get(file)) {
      if (!members.has(target)) continue;
      if (target === start) {
        const path = [file];
        while (path[0] !== start) path.unshift(cameFrom.get(path[0]));
        return [...path, start];
      }
      if (!cameFrom.has(target)) {
        cameFrom.set(target, file);
        queue.push(target);
      }
    }
  }
  return [start];
}

const folders = process.argv.length > 2 ? process.argv.slice(2).map((dir) => resolve(dir)) : defaultFolders();
const graph = importGraph(folders.flatMap(typescriptFiles));
const found = circles(graph);
const shown = (file) => relative(process.cwd(), file);
for (const component of found) {
  console.error(`import cycle among ${component.length} files: ${component.map(shown).sort().join(", ")}`);
  console.error(`  ${cycleIn(graph, component).map(shown).join("\n  -> ")}`);
}
if (found.length > 0) process.exit(1);
console.log(`no import cycle among ${graph.size} files`);
