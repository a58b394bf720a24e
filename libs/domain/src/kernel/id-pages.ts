import type { Problem } from "./problems";
import { queryReader, type QueryValues } from "./query-values";

export const ID_PAGE_DEFAULT = 25;
export const ID_PAGE_MAX = 100;

/** A page of a list in id order: at most `limit` items with an id above `afterId`. */
export interface IdPageRequest {
  limit: number;
  afterId: number;
}

/** Opaque to clients, so that the keyset behind it can change without breaking them. `list` names what it pages. */
export function idCursor(list: string, lastId: number): string {
  return Buffer.from(`${list}:${lastId}`).toString("base64url");
}

function afterIdFromCursor(list: string, cursor: string): number | null {
  const match = new RegExp(`^${list}:([0-9]{1,10})$`).exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (match === null || idCursor(list, Number(match[1])) !== cursor) return null;
  return Number(match[1]);
}

/** Reads `limit` and `cursor` (a cursor of the same list) from a query string; a repeated parameter is a problem too. */
export function idPageRequest(
  list: string,
  query: QueryValues,
): { ok: true; page: IdPageRequest } | { ok: false; problems: Problem[] } {
  const problems: Problem[] = [];
  const { limit, cursor } = queryReader(query, problems);
  const page = {
    limit: limit(ID_PAGE_DEFAULT, ID_PAGE_MAX),
    afterId: cursor((text) => afterIdFromCursor(list, text)) ?? 0,
  };
  return problems.length > 0 ? { ok: false, problems } : { ok: true, page };
}
