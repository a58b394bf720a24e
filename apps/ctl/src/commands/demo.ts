import { applyProfileWrites, createCredential, insertTopic, type Sql } from "@cm/db";
import { PERMISSIONS, profileKeyForId, stateFromEvent, type IdentifyEvent, type TopicStatus } from "@cm/domain";
import { importDemoJourneys } from "./journey";

export const DEMO_PROJECT_NAME = "Demo project";
const DEMO_PROFILES = 300;

const DEMO_TOPICS: { name: string; description: string | null; defaultStatus: TopicStatus }[] = [
  { name: "Newsletter", description: "Monthly product newsletter", defaultStatus: "subscribed" },
  { name: "Product updates", description: "Release notes and new features", defaultStatus: "subscribed" },
  { name: "Promotions", description: null, defaultStatus: "unsubscribed" },
];

const PLANS = ["free", "team", "business"];
const LANGUAGES = ["en", "fr", "de", "es"];

function demoEvent(projectId: number, n: number, topicIds: number[], now: number): IdentifyEvent {
  const id = `demo-user-${String(n).padStart(4, "0")}`;
  const event: IdentifyEvent = {
    projectId,
    key: profileKeyForId(id),
    id,
    t: now - (DEMO_PROFILES - n) * 60_000,
    updateOnly: false,
    email: `${id}@example.com`,
    data: {
      plan: PLANS[n % PLANS.length] as string,
      language: LANGUAGES[n % LANGUAGES.length] as string,
      logins: n % 17,
    },
    channels:
      n % 3 === 0 ? [{ type: "push", address: `device-token-${n}`, platform: n % 2 === 0 ? "ios" : "android" }] : [],
  };
  if (n % 5 === 0 && topicIds[2] !== undefined) event.topics = [{ id: topicIds[2], status: "subscribed" }];
  if (n % 7 === 0 && topicIds[0] !== undefined) event.topics = [{ id: topicIds[0], status: "unsubscribed" }];
  return event;
}

/**
 * The project a person trying the service starts from. It is created once; later runs only
 * issue fresh credentials for it, since stored credentials cannot be shown again.
 */
export async function demoCommand(sql: Sql) {
  return sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(4200002)`;
    const [existing] = await tx<{ id: number; name: string }[]>`
      SELECT id, name FROM projects WHERE name = ${DEMO_PROJECT_NAME} ORDER BY id LIMIT 1`;
    let project = existing;
    if (project === undefined) {
      [project] = await tx<
        { id: number; name: string }[]
      >`INSERT INTO projects (name) VALUES (${DEMO_PROJECT_NAME}) RETURNING id, name`;
      const { id: projectId } = project as { id: number };
      const topicIds: number[] = [];
      for (const topic of DEMO_TOPICS) topicIds.push((await insertTopic(tx, { projectId, ...topic })).id);
      const now = Date.now();
      const events = Array.from({ length: DEMO_PROFILES }, (_, n) => demoEvent(projectId, n + 1, topicIds, now));
      await applyProfileWrites(
        tx,
        events.map((event) => ({ projectId, key: event.key, externalId: event.id, state: stateFromEvent(event) })),
      );
      await importDemoJourneys(tx, projectId);
    }
    const { id, name } = project as { id: number; name: string };
    return {
      project: { id, name },
      auth_token: await createCredential(tx, id, "auth_token"),
      api_key: await createCredential(tx, id, "api_key", PERMISSIONS),
    };
  });
}
