import { createCredential, createProject, insertTopic, type Db } from "@cm/db";
import { newTopicValues, PERMISSIONS, type Permission, type TopicStatus } from "@cm/domain";

export interface TestProject {
  id: number;
  authToken: string;
  apiKey: string;
  keyWith(permissions: Permission[]): Promise<string>;
  topic(name: string, defaultStatus?: TopicStatus): Promise<number>;
}

export async function createTestProject(sql: Db, name = "Test project"): Promise<TestProject> {
  const project = await createProject(sql, name);
  return {
    id: project.id,
    authToken: await createCredential(sql, project.id, "auth_token"),
    apiKey: await createCredential(sql, project.id, "api_key", PERMISSIONS),
    keyWith: (permissions) => createCredential(sql, project.id, "api_key", permissions),
    topic: async (topicName, defaultStatus = "subscribed") =>
      (await insertTopic(sql, project.id, newTopicValues({ name: topicName, default_status: defaultStatus }))).id,
  };
}
