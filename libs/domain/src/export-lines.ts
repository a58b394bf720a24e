import type { ProfileChannel, UserEvent } from "./resources";
import type { TopicStatus } from "./topic";

// The lines of `ctl export` (docs/bulk.md "Export"): NDJSON, one profile or event a line, in the
// shape `ctl import` reads back. Times are ISO 8601; topics are named, not numbered, since ids
// differ from one project to the next.

/** A profile as the profile read shows it, with every id linked with it. */
export interface ExportedProfileLine {
  type: "profile";
  /** The id it is known by (its latest reidentify's). */
  id: string;
  /** Its other ids, each linked with `id` by a reidentify. */
  previous_ids: string[];
  email: string | null;
  phone_number: string | null;
  channels: ProfileChannel[];
  data: Record<string, unknown>;
  tags: string[];
  unsubscribed: boolean;
  /** Explicit topic choices, by topic name. */
  topics: Record<string, TopicStatus>;
  created_at: string;
  updated_at: string;
}

/** One event of a profile: `user_id` is the `id` of its profile's line, which comes before it. */
export interface ExportedEventLine extends UserEvent {
  type: "event";
  user_id: string;
}
