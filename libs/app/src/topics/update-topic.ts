import { isDuplicateTopicName, lockTopic, saveTopic, startTopicFanout } from "@cm/db";
import { applyTopicPatch, sameTopicValues, topicResource, type Topic, type TopicPatch } from "@cm/domain";
import { addTopicFanout } from "@cm/queue";
import type { Store, TopicFanoutQueue, WarningLog } from "../deps";
import { DuplicateTopicName, NotFound, QueueUnavailable } from "../errors";

/** The fan-out job is queued before the commit: if Redis refuses it, the update is rolled back. */
async function queueFanout(
  deps: { topicFanoutQueue: TopicFanoutQueue; logger: WarningLog },
  topicId: number,
  generation: number,
) {
  try {
    await addTopicFanout(deps.topicFanoutQueue, { topicId, generation });
  } catch (error) {
    deps.logger.warn(
      { topicId, err: error instanceof Error ? error.message : String(error) },
      "topic fan-out not queued",
    );
    throw new QueueUnavailable();
  }
}

/**
 * api.md "Update a topic" rules 1–4 in one transaction. The topic row stays locked to the
 * commit, so updates of one topic and the chunks of its fan-out take turns. A patch that
 * changes nothing writes nothing.
 */
export async function updateTopic(
  deps: Store & { topicFanoutQueue: TopicFanoutQueue; logger: WarningLog },
  projectId: number,
  id: number,
  patch: TopicPatch,
): Promise<Topic> {
  try {
    const saved = await deps.sql.begin(async (tx) => {
      const current = await lockTopic(tx, projectId, id);
      if (current === null) throw new NotFound("topic");
      const next = applyTopicPatch(current, patch);
      if (sameTopicValues(current, next)) return current;
      const updated = await saveTopic(tx, id, next);
      if (next.default_status !== current.default_status) {
        await queueFanout(deps, id, await startTopicFanout(tx, id));
      }
      return updated;
    });
    return topicResource(saved);
  } catch (error) {
    if (isDuplicateTopicName(error)) throw new DuplicateTopicName(patch.name?.trim() ?? "");
    throw error;
  }
}
