import { insertTopic, isDuplicateTopicName } from "@cm/db";
import { newTopicValues, topicResource, type NewTopicBody, type Topic } from "@cm/domain";
import type { Store } from "../deps";
import { DuplicateTopicName } from "../errors";

/** decisions.md "Topics": a new topic, subscribed by default unless the body says otherwise. */
export async function createTopic(deps: Store, projectId: number, body: NewTopicBody): Promise<Topic> {
  const values = newTopicValues(body);
  try {
    return topicResource(await insertTopic(deps.sql, projectId, values));
  } catch (error) {
    if (isDuplicateTopicName(error)) throw new DuplicateTopicName(values.name);
    throw error;
  }
}
