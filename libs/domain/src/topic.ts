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
  source: "explicit" | "default";
}

/** A profile's status for each topic: its explicit choice, else the topic's default. */
export function topicSubscriptions(
  explicit: Record<string, TopicStatus>,
  topics: readonly TopicDefault[],
): TopicSubscription[] {
  return topics.map((topic) => {
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

/** The Topic resource of api.md: `description` is omitted when blank. */
export function topicResource(topic: TopicRecord): Record<string, unknown> {
  return {
    id: topic.id,
    name: topic.name,
    ...(topic.description !== null && topic.description.trim() !== "" ? { description: topic.description } : {}),
    default_status: topic.default_status,
    created_at: topic.created_at.toISOString(),
    updated_at: topic.updated_at.toISOString(),
  };
}

/** Problems with a topic name as saved (trimmed), or none. */
export function topicNameProblems(name: string): string[] {
  const trimmed = name.trim();
  if (trimmed.length === 0) return ["name must not be empty"];
  if (trimmed.length > TOPIC_NAME_MAX) return [`name must be at most ${TOPIC_NAME_MAX} characters`];
  return [];
}

export function topicDescriptionProblems(description: string | null): string[] {
  return description !== null && description.length > TOPIC_DESCRIPTION_MAX
    ? [`description must be at most ${TOPIC_DESCRIPTION_MAX} characters`]
    : [];
}
