import type { TopicRecord } from "../topics/topic";
import type { Topic } from "./resources";

/** The Topic resource of api.md: `description` is omitted when blank. */
export function topicResource(topic: TopicRecord): Topic {
  return {
    id: topic.id,
    name: topic.name,
    ...(topic.description !== null && topic.description.trim() !== "" ? { description: topic.description } : {}),
    default_status: topic.default_status,
    created_at: topic.created_at.toISOString(),
    updated_at: topic.updated_at.toISOString(),
  };
}
