import type { EventSummary, ProfileRows } from "@cm/db";
import { topicSubscriptions, type Profile, type TopicDefault } from "@cm/domain";

/** The events of all of a profile's keys, from each key's summary. */
function summaryOfKeys(keys: readonly string[], summaries: ReadonlyMap<string, EventSummary>): EventSummary {
  let count = 0;
  let last: Date | null = null;
  for (const summary of keys.map((key) => summaries.get(key))) {
    if (summary === undefined) continue;
    count += summary.count;
    if (summary.last !== null && (last === null || summary.last > last)) last = summary.last;
  }
  return { count, last };
}

/**
 * decisions.md "Profile read": a profile (its rows merged field by field, docs/profiles.md) with
 * every topic of the project and its ids' events, as every read shows it.
 */
export function profileResource(
  { id, keys, shown }: ProfileRows,
  topics: readonly TopicDefault[],
  eventSummaries: ReadonlyMap<string, EventSummary>,
): Profile {
  const events = summaryOfKeys(keys, eventSummaries);
  const { created_at, updated_at, ...values } = shown.fields;
  return {
    id,
    ...values,
    topics: topicSubscriptions(shown.visible.topics, topics, shown.visible.unsubscribed),
    event_count: events.count,
    last_event_at: events.last?.toISOString() ?? null,
    created_at,
    updated_at,
  };
}
