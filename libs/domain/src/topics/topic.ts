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

/**
 * A topic's values: what POST /topics sets, PATCH /topics/{id} changes and the Topic resource
 * shows, each stored in the column of `topics` of its name. The bodies, the resource (so the
 * OpenAPI document) and libs/db's statements follow this type and TOPIC_RULES: a new value is
 * declared here, its column added by a migration (docs/code.md "Recipe: add a field to topics").
 */
export interface TopicValues {
  name: string;
  description: string | null;
  default_status: TopicStatus;
}

/** A stored topic: its values, its id and its times. */
export interface TopicRecord extends TopicValues {
  id: number;
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

/**
 * Each value's rules that typia cannot express (lengths after trimming, characters Postgres
 * refuses), checked when the value has the right type: typia reports the others. One entry a
 * value, in TopicValues' order (the Topic resource's), so the compiler refuses a value left out.
 */
const TOPIC_RULES: { [Field in keyof TopicValues]: (value: unknown) => Problem[] } = {
  name: (name) => (typeof name === "string" ? topicNameProblems(name) : []),
  description: (description) => (typeof description === "string" ? topicDescriptionProblems(description) : []),
  default_status: () => [],
};

/** The fields of TopicValues, in its order: libs/db stores each in the column of its name. */
export const TOPIC_FIELDS = Object.keys(TOPIC_RULES) as readonly (keyof TopicValues)[];

/** The values a new topic takes where POST /topics leaves them out (decisions.md "Topics"). */
const NEW_TOPIC_DEFAULTS: Omit<TopicValues, "name"> = { description: null, default_status: "subscribed" };

// An interface, not an alias of Partial, so that the OpenAPI document names its schema TopicFields.
/** The writable fields of a topic, as the API names them (types are checked by typia). */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface TopicFields extends Partial<TopicValues> {}

/** Body of PATCH /topics/{id}: omitted fields are left unchanged, a null description clears it. */
export type TopicPatch = TopicFields;

/** Body of POST /topics. */
export interface NewTopicBody extends TopicFields {
  name: string;
}

/** The problems TOPIC_RULES finds in a body's fields, whether typia passed the body or not. */
export function topicFieldProblems(fields: Partial<Record<keyof TopicValues, unknown>>): Problem[] {
  return TOPIC_FIELDS.flatMap((field) => TOPIC_RULES[field](fields[field]));
}

/** Rule 5 of api.md "Update a topic": an empty patch is refused. */
export function topicPatchProblems(body: object): Problem[] {
  if (Object.keys(body).length === 0) {
    return [{ path: "", message: `body must have at least one of ${TOPIC_FIELDS.join(", ")}` }];
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

/** A new topic's values: the body's, its name trimmed, and the defaults of those it leaves out. */
export function newTopicValues(body: NewTopicBody): TopicValues {
  return { ...NEW_TOPIC_DEFAULTS, ...body, name: body.name.trim() };
}

/**
 * api.md "Update a topic" rules 1 and 2: omitted fields stay (a body's JSON has no undefined
 * field), a null description clears it; names are saved trimmed.
 */
export function applyTopicPatch(current: TopicValues, patch: TopicPatch): TopicValues {
  return { ...current, ...patch, name: patch.name?.trim() ?? current.name };
}

export function sameTopicValues(a: TopicValues, b: TopicValues): boolean {
  return TOPIC_FIELDS.every((field) => a[field] === b[field]);
}
