import { insertTopic, isDuplicateTopicName } from "@cm/db";
import { topicResource, type NewTopicBody, type Topic } from "@cm/domain";
import type { Store } from "../deps";
import { DuplicateTopicName } from "../errors";

/** decisions.md "Topics": a new topic, subscribed by default unless the body says otherwise. */
export async function createTopic(deps: Store, projectId: number, body: NewTopicBody): Promise<Topic> {
  const name = body.name.trim();
  try {
    const topic = await insertTopic(deps.sql, {
      projectId,
      name,
      description: body.description ?? null,
      defaultStatus: body.default_status ?? "subscribed",
    });
    return topicResource(topic);
  } catch (error) {
    if (isDuplicateTopicName(error)) throw new DuplicateTopicName(name);
    throw error;
  }
}
