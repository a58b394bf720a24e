import { Queue, type Job, type JobsOptions } from "bullmq";
import { acknowledgedWrite, TRIED_UNTIL_APPLIED } from "./batch-queues";
import { TOPIC_FANOUT_JOB, TOPIC_FANOUT_QUEUE, queueName } from "./names";
import { isCluster, type RedisConnection } from "./redis-nodes";

/** Fan-out jobs name their kind and payload version too (see payloads.ts); those queued before read as this. */
export const TOPIC_FANOUT_KIND = { kind: "topic-fanout", v: 1 } as const;

/**
 * One job per change of a topic's default_status. The job holds no progress of its own: the
 * fan-out's state lives in Postgres (topic_fanouts), keyed by the topic and this generation.
 */
export interface TopicFanoutJobData {
  kind?: (typeof TOPIC_FANOUT_KIND)["kind"];
  v?: (typeof TOPIC_FANOUT_KIND)["v"];
  topicId: number;
  generation: number;
}

/** Tried until done, whatever the outage. */
export const TOPIC_FANOUT_JOB_OPTIONS: JobsOptions = TRIED_UNTIL_APPLIED;

export function topicFanoutQueue(connection: RedisConnection, prefix: string): Queue<TopicFanoutJobData> {
  return new Queue<TopicFanoutJobData>(queueName(TOPIC_FANOUT_QUEUE, isCluster(connection)), {
    connection,
    prefix,
    defaultJobOptions: TOPIC_FANOUT_JOB_OPTIONS,
  });
}

export function addTopicFanout(
  queue: Queue<TopicFanoutJobData>,
  data: TopicFanoutJobData,
): Promise<Job<TopicFanoutJobData>> {
  return acknowledgedWrite(queue, queue.add(TOPIC_FANOUT_JOB, { ...TOPIC_FANOUT_KIND, ...data }));
}
