import { createTopic, DuplicateTopicName } from "@cm/app";
import { projectExists, type Sql } from "@cm/db";
import { problemText, topicFieldProblems, TOPIC_STATUSES, type NewTopicBody, type TopicStatus } from "@cm/domain";
import { CliError } from "../cli-error";

/** `topic create`: the createTopic of POST /topics (libs/app), for a project named by id, with the ctl's messages. */
export async function createTopicCommand(
  sql: Sql,
  input: { projectId: number; name: string; description: string | null; defaultStatus: string },
) {
  if (!(TOPIC_STATUSES as readonly string[]).includes(input.defaultStatus)) {
    throw new CliError(`--default-status must be one of ${TOPIC_STATUSES.join(", ")}`, 2);
  }
  const body: NewTopicBody = {
    name: input.name,
    description: input.description,
    default_status: input.defaultStatus as TopicStatus,
  };
  const problems = topicFieldProblems(body);
  if (problems.length > 0) throw new CliError(problemText(problems), 2);
  if (!(await projectExists(sql, input.projectId))) throw new CliError(`project ${input.projectId} does not exist`);
  try {
    return await createTopic({ sql }, input.projectId, body);
  } catch (error) {
    if (error instanceof DuplicateTopicName)
      throw new CliError(`project ${input.projectId} already has a topic named "${error.topicName}"`);
    throw error;
  }
}
