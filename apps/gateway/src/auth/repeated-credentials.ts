/** The names real clients give the identify credential: api.md's, and Vero's newer one. */
export const IDENTIFY_CREDENTIAL_FIELDS = ["auth_token", "tracking_api_key"] as const;

/** Where the JSON string that opens at `start` (a `"`) ends: the index after its closing quote. */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length && text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
  return i + 1;
}

/** Where the JSON value that starts at or after `start` ends: at its object's next `,` or `}`. */
function valueEnd(text: string, start: number): number {
  let depth = 0;
  let i = start;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      i = stringEnd(text, i);
      continue;
    }
    if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") {
      if (depth === 0) return i;
      depth--;
    } else if (c === "," && depth === 0) return i;
    i++;
  }
  return i;
}

/** Every value the top-level object of valid JSON `text` gives `name`, in order. */
function topLevelJsonValues(text: string, name: string): unknown[] {
  const values: unknown[] = [];
  let depth = 0;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      const end = stringEnd(text, i);
      let colon = end;
      while (/\s/.test(text[colon] ?? "")) colon++;
      if (depth === 1 && text[colon] === ":" && JSON.parse(text.slice(i, end)) === name) {
        const value = valueEnd(text, colon + 1);
        values.push(JSON.parse(text.slice(colon + 1, value)) as unknown);
        i = value;
      } else i = end;
      continue;
    }
    if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") depth--;
    i++;
  }
  return values;
}

/**
 * The values of a credential field the body's text names more than once. Parsing keeps only the
 * last (JSON.parse, and forms as Rack reads them), so a body naming two different tokens would
 * otherwise be taken for the last one's project: decisions.md makes credentials that disagree a
 * 401. `raw` is valid JSON, or a form when `form`; a field named once yields nothing here (the
 * parsed body has it), so most bodies cost two indexOf calls.
 */
export function repeatedBodyCredentials(raw: string, form: boolean): unknown[] {
  const values: unknown[] = [];
  for (const field of IDENTIFY_CREDENTIAL_FIELDS) {
    const needle = form ? `${field}=` : `"${field}"`;
    const first = raw.indexOf(needle);
    if (first === -1 || first === raw.lastIndexOf(needle)) continue;
    values.push(...(form ? new URLSearchParams(raw).getAll(field) : topLevelJsonValues(raw, field)));
  }
  return values;
}
