export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** JSON with object keys sorted at every depth, so equal values always give equal text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const record = value as Record<string, unknown>;
  const fields = Object.keys(record)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`);
  return `{${fields.join(",")}}`;
}

/** Postgres text and jsonb cannot hold U+0000, so such input is refused before it is queued. */
export function containsNul(value: unknown): boolean {
  if (typeof value === "string") return value.includes("\u0000");
  if (value === null || typeof value !== "object") return false;
  if (Array.isArray(value)) return value.some(containsNul);
  // A plain loop: this runs on every identify body, and entries() arrays cost more than the scan.
  for (const key in value) {
    if (key.includes("\u0000") || containsNul((value as Record<string, unknown>)[key])) return true;
  }
  return false;
}
