import { idCursor, idPageRequest, type IdPageRequest } from "../kernel/id-pages";
import { unstorableText } from "../kernel/json";
import type { Problem } from "../kernel/problems";
import type { QueryValues } from "../kernel/query-values";

export const TOPIC_STATUSES = ["subscribed", "unsubscribed"] as const;
export type TopicStatus = (typeof TOPIC_STATUSES)[number];

export interface TopicDefault {
  id: number;
  name: string;
  default_status: TopicStatus;
}

export interface TopicSubscription {
  id: number;
  name: string;
  status: TopicStatus;
  source: "explicit" | "default" | "global";
}

/**
 * A profile's status for each topic: unsubscribed while it is unsubscribed from everything,
 * else its explicit choice, else the topic's default. The choices are kept while unsubscribed,
 * and read again after a resubscribe.
 */
export function topicSubscriptions(
  explicit: Record<string, TopicStatus>,
  topics: readonly TopicDefault[],
  unsubscribed: boolean,
): TopicSubscription[] {
  return topics.map((topic) => {
    if (unsubscribed) return { id: topic.id, name: topic.name, status: "unsubscribed", source: "global" };
    const choice = explicit[String(topic.id)];
    return choice === undefined
      ? { id: topic.id, name: topic.name, status: topic.default_status, source: "default" }
      : { id: topic.id, name: topic.name, status: choice, source: "explicit" };
  });
}

export const TOPIC_NAME_MAX = 255;
export const TOPIC_DESCRIPTION_MAX = 200;

export interface TopicRecord {
  id: number;
  name: string;
  description: string | null;
  default_status: TopicStatus;
  created_at: Date;
  updated_at: Date;
}

/** Lengths count characters (code points), as Postgres' length() does, not UTF-16 units. */
function characters(text: string): number {
  return [...text].length;
}

function storableTextProblems(path: string, text: string): Problem[] {
  const unstorable = unstorableText(text);
  return unstorable === null ? [] : [{ path, message: `${path} ${unstorable}` }];
}

/** Problems with a topic name as saved (trimmed), or none. */
export function topicNameProblems(name: string): Problem[] {
  const trimmed = name.trim();
  if (trimmed.length === 0) return [{ path: "name", message: "name must not be empty" }];
  if (characters(trimmed) > TOPIC_NAME_MAX) {
    return [{ path: "name", message: `name must be at most ${TOPIC_NAME_MAX} characters` }];
  }
  return storableTextProblems("name", trimmed);
}

export function topicDescriptionProblems(description: string | null): Problem[] {
  if (description === null) return [];
  if (characters(description) > TOPIC_DESCRIPTION_MAX) {
    return [{ path: "description", message: `description must be at most ${TOPIC_DESCRIPTION_MAX} characters` }];
  }
  return storableTextProblems("description", description);
}

/** The writable fields of a topic, as the API names them (types are checked by typia). */
export interface TopicFields {
  name?: string;
  description?: string | null;
  default_status?: TopicStatus;
}

/** Body of PATCH /topics/{id}: omitted fields are left unchanged, a null description clears it. */
export type TopicPatch = TopicFields;

/** Body of POST /topics. */
export interface NewTopicBody extends TopicFields {
  name: string;
}

/**
 * The rules typia cannot express (lengths after trimming, characters Postgres refuses), for
 * the fields that have the right type; typia reports the others.
 */
export function topicFieldProblems(fields: { name?: unknown; description?: unknown }): Problem[] {
  return [
    ...(typeof fields.name === "string" ? topicNameProblems(fields.name) : []),
    ...(typeof fields.description === "string" ? topicDescriptionProblems(fields.description) : []),
  ];
}

/** Rule 5 of api.md "Update a topic": an empty patch is refused. */
export function topicPatchProblems(body: object): Problem[] {
  if (Object.keys(body).length === 0) {
    return [{ path: "", message: "body must have at least one of name, description, default_status" }];
  }
  return topicFieldProblems(body);
}

/** A page of the topic list (kernel/id-pages.ts). */
export type TopicPageRequest = IdPageRequest;

export function topicCursor(lastId: number): string {
  return idCursor("topic", lastId);
}

export function topicPageRequest(query: QueryValues) {
  return idPageRequest("topic", query);
}

/** What a topic update can change. */
export interface TopicValues {
  name: string;
  description: string | null;
  default_status: TopicStatus;
}

/** api.md "Update a topic" rules 1 and 2: omitted fields stay, a null description clears it; names are saved trimmed. */
export function applyTopicPatch(current: TopicValues, patch: TopicPatch): TopicValues {
  return {
    name: patch.name === undefined ? current.name : patch.name.trim(),
    description: patch.description === undefined ? current.description : patch.description,
    default_status: patch.default_status ?? current.default_status,
  };
}

export function sameTopicValues(a: TopicValues, b: TopicValues): boolean {
  return a.name === b.name && a.description === b.description && a.default_status === b.default_status;
}
