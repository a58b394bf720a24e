import { insertTopic, isDuplicateTopicName, projectExists, type Sql } from "@cm/db";
import {
  problemText,
  topicDescriptionProblems,
  topicNameProblems,
  topicResource,
  TOPIC_STATUSES,
  type TopicStatus,
} from "@cm/domain";
import { CliError } from "../cli-error";

export async function createTopicCommand(
  sql: Sql,
  input: { projectId: number; name: string; description: string | null; defaultStatus: string },
) {
  if (!(TOPIC_STATUSES as readonly string[]).includes(input.defaultStatus)) {
    throw new CliError(`--default-status must be one of ${TOPIC_STATUSES.join(", ")}`, 2);
  }
  const problems = [...topicNameProblems(input.name), ...topicDescriptionProblems(input.description)];
  if (problems.length > 0) throw new CliError(problemText(problems), 2);
  if (!(await projectExists(sql, input.projectId))) throw new CliError(`project ${input.projectId} does not exist`);
  try {
    const topic = await insertTopic(sql, {
      projectId: input.projectId,
      name: input.name.trim(),
      description: input.description,
      defaultStatus: input.defaultStatus as TopicStatus,
    });
    return topicResource(topic);
  } catch (error) {
    if (isDuplicateTopicName(error))
      throw new CliError(`project ${input.projectId} already has a topic named "${input.name.trim()}"`);
    throw error;
  }
}
