import { topicsAfter } from "@cm/db";
import { topicCursor, topicResource, type TopicPage, type TopicPageRequest } from "@cm/domain";
import type { Store } from "../deps";

/** decisions.md "Topics": a page of the project's topics by id, with the cursor of the next. */
export async function listTopics(
  deps: Store,
  projectId: number,
  { limit, afterId }: TopicPageRequest,
): Promise<TopicPage> {
  // One row more than the page tells whether another page follows.
  const rows = await topicsAfter(deps.sql, projectId, afterId, limit + 1);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    data: page.map(topicResource),
    next_cursor: rows.length > limit && last !== undefined ? topicCursor(last.id) : null,
  };
}
