/** What a JSON text holds, found without parsing it. */
export interface JsonScan {
  /** Its objects and arrays: what parsing it builds besides its strings and numbers. */
  objects: number;
  /** How deep they nest. */
  depth: number;
  /** Every value its top-level object gives one of the fields asked for, in order (parsing keeps the last). */
  values: unknown[];
}

const [QUOTE, BACKSLASH, COLON, COMMA, OPEN_OBJECT, CLOSE_OBJECT, OPEN_ARRAY, CLOSE_ARRAY] = Array.from(
  '"\\:,{}[]',
  (c) => c.charCodeAt(0),
);

const WHITESPACE = /\s/;

/** The index of the quote that closes the string opening at `start`, or the text's length. */
function closingQuote(text: string, start: number): number {
  let quote = start;
  for (;;) {
    quote = text.indexOf('"', quote + 1);
    if (quote === -1) return text.length;
    let backslash = quote - 1;
    while (text.charCodeAt(backslash) === BACKSLASH) backslash--;
    if ((quote - 1 - backslash) % 2 === 0) return quote;
  }
}

function parsedOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The name a key's JSON string (quotes included) stands for. */
function keyName(quoted: string): unknown {
  return quoted.includes("\\") ? parsedOrUndefined(quoted) : quoted.slice(1, -1);
}

/**
 * One pass over the text, a few milliseconds for 5 MiB, where parsing a body of nested arrays
 * takes seconds and 30 times its size in objects. A string ends at its closing quote or at a
 * line break (JSON strings hold none, so JSON.parse stops there, and each NDJSON line is parsed
 * on its own): the objects and depth found are never fewer than parsing meets. `fields` are read
 * from the top-level object of valid JSON; invalid JSON yields what it yields, for parsing to
 * refuse.
 */
export function scanJson(text: string, fields: readonly string[] = []): JsonScan {
  let objects = 0;
  let depth = 0;
  let deepest = 0;
  let lineEnd = -1;
  const values: unknown[] = [];
  const rootIsObject = text.trimStart().charCodeAt(0) === OPEN_OBJECT;
  /** Where the value of a field asked for starts, until it ends at the top level. */
  let valueStart = -1;
  const valueEnds = (at: number) => {
    if (depth !== 1 || valueStart === -1) return;
    values.push(parsedOrUndefined(text.slice(valueStart, at)));
    valueStart = -1;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      if (lineEnd < i) {
        lineEnd = text.indexOf("\n", i);
        if (lineEnd === -1) lineEnd = text.length;
      }
      const end = Math.min(closingQuote(text, i), lineEnd);
      if (depth === 1 && rootIsObject && valueStart === -1 && fields.length > 0) {
        let after = end + 1;
        while (WHITESPACE.test(text[after] ?? "")) after++;
        if (text.charCodeAt(after) === COLON && fields.includes(keyName(text.slice(i, end + 1)) as string)) {
          valueStart = after + 1;
        }
      }
      i = end;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      objects++;
      if (++depth > deepest) deepest = depth;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      valueEnds(i);
      if (depth > 0) depth--;
    } else if (c === COMMA) valueEnds(i);
  }
  return { objects, depth: deepest, values };
}
