import { scanJson } from "../body/json-scan";

/** The names real clients give the identify credential: api.md's, and Vero's newer one. */
export const IDENTIFY_CREDENTIAL_FIELDS = ["auth_token", "tracking_api_key"] as const;

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
    values.push(...(form ? new URLSearchParams(raw).getAll(field) : scanJson(raw, [field]).values));
  }
  return values;
}
