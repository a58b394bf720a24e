import type { TopicStatus } from "../topics/topic";
import type { ProfileFields, UserEvent } from "./resources";

// The lines of `ctl export` (docs/bulk.md "Export"): NDJSON, one profile or event a line, in the
// shape `ctl import` reads back. Times are ISO 8601; topics are named, not numbered, since ids
// differ from one project to the next.

/** A profile as the profile read shows it, with every id linked with it. */
export interface ExportedProfileLine extends ProfileFields {
  type: "profile";
  /** The id it is known by (its latest reidentify's). */
  id: string;
  /** Its other ids, each linked with `id` by a reidentify. */
  previous_ids: string[];
  /** Explicit topic choices, by topic name. */
  topics: Record<string, TopicStatus>;
}

/** One event of a profile: `user_id` is the `id` of its profile's line, which comes before it. */
export interface ExportedEventLine extends UserEvent {
  type: "event";
  user_id: string;
}
