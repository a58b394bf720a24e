import { applyProfileWrites, isRefusedInput, type ProfileWrite, type Sql } from "@cm/db";
import { mergeStates, profileIdOf, profileKeyForId, stateFromEvent, type IdentifyEvent } from "@cm/domain";

/** One write per profile: events for the same profile are merged first (merging is order-free). */
export function profileWrites(events: readonly IdentifyEvent[]): ProfileWrite[] {
  const byProfile = new Map<string, ProfileWrite>();
  for (const event of events) {
    const externalId = profileIdOf(event);
    const key = profileKeyForId(externalId);
    const id = `${event.projectId}\u0000${key}`;
    const state = stateFromEvent(event);
    const existing = byProfile.get(id);
    if (existing === undefined) {
      byProfile.set(id, { projectId: event.projectId, key, externalId, state });
    } else {
      existing.state = mergeStates(existing.state, state);
    }
  }
  return [...byProfile.values()];
}

export interface ApplyOutcome {
  applied: number;
  poisoned: { event: IdentifyEvent; error: unknown }[];
  ignoredTopics: { projectId: number; key: string; topicIds: string[] }[];
}

/**
 * Applies a batch in one statement. When the input is refused (by Postgres, or by our own code
 * before it: not an outage), the batch is split in halves until the events refused stand alone;
 * those are reported as poisoned and every other event is applied. Other errors are thrown,
 * for the queue to retry the whole job.
 */
export async function applyIdentifyEvents(sql: Sql, events: readonly IdentifyEvent[]): Promise<ApplyOutcome> {
  const outcome: ApplyOutcome = { applied: 0, poisoned: [], ignoredTopics: [] };
  const apply = async (part: readonly IdentifyEvent[]): Promise<void> => {
    if (part.length === 0) return;
    try {
      const result = await applyProfileWrites(sql, profileWrites(part));
      outcome.applied += part.length;
      outcome.ignoredTopics.push(...result.ignoredTopics);
    } catch (error) {
      if (!isRefusedInput(error)) throw error;
      if (part.length === 1) {
        outcome.poisoned.push({ event: part[0] as IdentifyEvent, error });
        return;
      }
      const middle = Math.ceil(part.length / 2);
      await apply(part.slice(0, middle));
      await apply(part.slice(middle));
    }
  };
  await apply(events);
  return outcome;
}
