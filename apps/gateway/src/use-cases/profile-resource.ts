import { profileUpdatedAt, type EventSummary, type ProfileRows } from "@cm/db";
import { linkedState, topicSubscriptions, visibleProfile, type Profile, type TopicDefault } from "@cm/domain";

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
 * decisions.md "Profile read": the rows of one profile merged field by field (docs/profiles.md),
 * as every read shows it; null when they are not a profile.
 */
export function profileResource(
  { id, keys, rows }: ProfileRows,
  topics: readonly TopicDefault[],
  eventSummaries: ReadonlyMap<string, EventSummary>,
): Profile | null {
  const state = linkedState(rows.map((row) => row.state));
  const profile = visibleProfile(state);
  if (profile === null) return null;
  const events = summaryOfKeys(keys, eventSummaries);
  return {
    id,
    email: profile.email,
    phone_number: profile.phoneNumber,
    channels: profile.channels,
    data: profile.data,
    tags: profile.tags,
    unsubscribed: profile.unsubscribed,
    topics: topicSubscriptions(profile.topics, topics, profile.unsubscribed),
    event_count: events.count,
    last_event_at: events.last?.toISOString() ?? null,
    created_at: new Date(state.createdT as number).toISOString(),
    updated_at: new Date(profileUpdatedAt(rows)).toISOString(),
  };
}
