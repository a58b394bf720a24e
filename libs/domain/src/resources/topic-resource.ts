import { TOPIC_FIELDS, type TopicRecord } from "../topics/topic";
import type { Topic } from "./resources";

const isBlank = (text: string | null) => text === null || text.trim() === "";

/** The Topic resource of api.md: the topic's values in TOPIC_FIELDS' order, a blank `description` omitted. */
export function topicResource(topic: TopicRecord): Topic {
  const shown = TOPIC_FIELDS.filter((field) => field !== "description" || !isBlank(topic.description));
  return {
    id: topic.id,
    ...Object.fromEntries(shown.map((field) => [field, topic[field]])),
    created_at: topic.created_at.toISOString(),
    updated_at: topic.updated_at.toISOString(),
  } as Topic;
}
