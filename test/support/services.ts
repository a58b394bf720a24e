import type { Config } from "@cm/config";
import { startGateway, type RunningGateway } from "@cm/gateway";
import { startWorker, type RunningWorker } from "@cm/worker";
import { createTestDatabase, type TestDatabase } from "./database";
import { testConfig } from "./env";
import { testLogger } from "./logs";
import { createTestProject, type TestProject } from "./project";
import { createTestQueuePrefix } from "./queue";

/** One test file's world: its own database and queue prefix, a project, and in-process services. */
export interface TestStack {
  db: TestDatabase;
  config: Config;
  project: TestProject;
  gateway(): Promise<RunningGateway>;
  worker(): Promise<RunningWorker>;
  close(): Promise<void>;
}

export async function createTestStack(label: string, overrides: Partial<Config> = {}): Promise<TestStack> {
  const db = await createTestDatabase(label);
  const queue = createTestQueuePrefix(label);
  const config = testConfig(db.url, queue.prefix, overrides);
  const logger = testLogger(label);
  const running: { stop(): Promise<void> }[] = [];
  let gateway: RunningGateway | undefined;
  return {
    db,
    config,
    project: await createTestProject(db.sql),
    async gateway() {
      if (gateway === undefined) {
        gateway = await startGateway(config, logger);
        running.push(gateway);
      }
      return gateway;
    },
    async worker() {
      const worker = await startWorker(config, logger);
      running.push(worker);
      return worker;
    },
    async close() {
      await Promise.all(running.map((service) => service.stop()));
      await queue.cleanup();
      await db.drop();
    },
  };
}
