import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");

/** README.md and every Markdown file under docs/: the pages a reader of a clone starts from. */
function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? markdownFiles(join(dir, entry.name))
      : entry.name.endsWith(".md")
        ? [join(dir, entry.name)]
        : [],
  );
}

const pages = [join(root, "README.md"), ...markdownFiles(join(root, "docs"))];

/** The text without fenced code blocks. */
function withoutFences(text: string): string {
  return text.replace(/^ {0,3}(`{3,}|~{3,})[^\n]*\n[\s\S]*?^ {0,3}\1[^\n]*$/gm, "");
}

/** The text without fenced code blocks and code spans, where a `[x](y)` is not a link. */
function withoutCode(text: string): string {
  return withoutFences(text).replace(/(`+)[\s\S]*?\1/g, "");
}

/** Link targets: inline links and images `[text](target "title")`, and reference definitions `[id]: target`. */
function linkTargets(markdown: string): string[] {
  const text = withoutCode(markdown);
  const inline = [...text.matchAll(/\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/g)];
  const definitions = [...text.matchAll(/^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)/gm)];
  return [...inline, ...definitions].map((match) => (match[1] as string).replace(/^<(.*)>$/, "$1"));
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const match of withoutFences(markdown).matchAll(/^ {0,3}#{1,6}[ \t]+(.*?)[ \t#]*$/gm)) {
    const text = (match[1] as string)
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // a link's text only
      .replace(/[`*]/g, "");
    const slug = text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
      .replace(/ /g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/**
 * Why a link from `page` to `target` does not lead to a file of the repository, or null when it
 * does. Links with a scheme (https:, mailto:) leave the repository on purpose and are not checked.
 */
function linkProblem(page: string, target: string): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//")) return null;
  const hash = target.indexOf("#");
  const pathPart = hash === -1 ? target : target.slice(0, hash);
  const anchor = hash === -1 ? null : target.slice(hash + 1);
  let path: string;
  try {
    path = decodeURIComponent(pathPart.replace(/\?.*$/, ""));
  } catch {
    return `${target}: malformed percent-encoding`;
  }
  // GitHub reads `/x` from the repository's root.
  const file = path === "" ? page : path.startsWith("/") ? join(root, path) : resolve(dirname(page), path);
  const inside = relative(root, file);
  if (inside.split(sep)[0] === ".." || isAbsolute(inside)) return `${target}: outside the repository`;
  if (!existsSync(file)) return `${target}: no such file`;
  if (anchor === null || anchor === "" || !file.endsWith(".md") || statSync(file).isDirectory()) return null;
  if (!headingAnchors(readFileSync(file, "utf8")).has(decodeURIComponent(anchor).toLowerCase())) {
    return `${target}: no heading with the anchor #${anchor}`;
  }
  return null;
}

describe("links in README.md and docs/", () => {
  it.each(pages.map((page) => [relative(root, page), page]))("%s links only to files of the repository", (_, page) => {
    const problems = linkTargets(readFileSync(page, "utf8"))
      .map((target) => linkProblem(page, target))
      .filter((problem) => problem !== null);
    expect(problems).toEqual([]);
  });

  it("finds the pages and their links", () => {
    expect(pages.map((page) => relative(root, page))).toContain("docs/api.md");
    expect(linkTargets(readFileSync(join(root, "README.md"), "utf8"))).toContain("docs/api.md");
  });
});

describe("the link check itself", () => {
  const readme = join(root, "README.md");
  const apiPage = join(root, "docs", "api.md");

  it("refuses a link out of the repository, even to a file that exists there", () => {
    expect(linkProblem(readme, "../shared/spec/api.md")).toMatch(/outside the repository/);
    expect(linkProblem(apiPage, "../../shared/spec/decisions.md#identify")).toMatch(/outside the repository/);
    expect(linkProblem(readme, "../README.md")).toMatch(/outside the repository/);
    expect(linkProblem(readme, "/etc/hostname")).toMatch(/no such file/);
  });

  it("refuses a missing file or heading, and accepts existing ones", () => {
    expect(linkProblem(readme, "docs/nowhere.md")).toMatch(/no such file/);
    expect(linkProblem(readme, "docs/api.md#no-such-heading")).toMatch(/no heading/);
    expect(linkProblem(readme, "docs/api.md#identify-a-user")).toBeNull();
    expect(linkProblem(apiPage, "#revision-header")).toBeNull();
    expect(linkProblem(readme, "docs/")).toBeNull();
    expect(linkProblem(readme, "https://example.com/x.md")).toBeNull();
  });

  it("reads inline links, images and reference definitions, not code", () => {
    const markdown = [
      "See [the spec](../shared/spec/api.md) and ![a picture](<img/a b.png> 'title').",
      "[ref]: docs/topics.md#the-fan-out",
      "Not a link: `[x](../y.md)`.",
      "```",
      "[x](../z.md)",
      "```",
    ].join("\n");
    expect(linkTargets(markdown)).toEqual(["../shared/spec/api.md", "img/a b.png", "docs/topics.md#the-fan-out"]);
  });

  it("names headings as GitHub does", () => {
    const anchors = headingAnchors(
      "# API reference\n## Read model of default_status\n### `revision` header, again!\n## Topics\n## Topics\n",
    );
    expect([...anchors]).toEqual([
      "api-reference",
      "read-model-of-default_status",
      "revision-header-again",
      "topics",
      "topics-1",
    ]);
  });
});
