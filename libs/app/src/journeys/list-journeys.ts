import { journeysAfter } from "@cm/db";
import { idCursor, type JourneyListRequest, type JourneyPage } from "@cm/domain";
import type { Store } from "../deps";

/** A page of the project's journeys by id (of one status, or all), with the cursor of the next. */
export async function listJourneys(
  deps: Store,
  projectId: number,
  { page, status }: JourneyListRequest,
): Promise<JourneyPage> {
  // One row more than the page tells whether another page follows.
  const rows = await journeysAfter(deps.sql, projectId, { afterId: page.afterId, limit: page.limit + 1, status });
  const data = rows.slice(0, page.limit);
  const last = data[data.length - 1];
  return { data, next_cursor: rows.length > page.limit && last !== undefined ? idCursor("journey", last.id) : null };
}
