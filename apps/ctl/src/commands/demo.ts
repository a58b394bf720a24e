import {
  allJourneysOfProject,
  allTopicsOfProject,
  applyProfileWrites,
  createCredential,
  createProject,
  DEMO_PROJECT_LOCK,
  findCredential,
  findProjectByName,
  insertTopic,
  profileKeySecrets,
  storeEventsInTransaction,
  takeAdvisoryLock,
  type Sql,
  type Transaction,
} from "@cm/db";
import {
  mergeStates,
  newTopicValues,
  PERMISSIONS,
  profileKeysWith,
  stateFromOperation,
  type CredentialKind,
  type IdentifyEvent,
  type NewTopicBody,
  type ProfileKeyOf,
  type ProfileState,
  type StateOperation,
  type TrackedEvent,
} from "@cm/domain";
import { randomUUID } from "node:crypto";
import { importDemoJourneys } from "./journey";

export const DEMO_PROJECT_NAME = "Demo project";
const DEMO_PROFILES = 300;

const DEMO_TOPICS: NewTopicBody[] = [
  { name: "Newsletter", description: "Monthly product newsletter", default_status: "subscribed" },
  { name: "Product updates", description: "Release notes and new features", default_status: "subscribed" },
  { name: "Promotions", description: null, default_status: "unsubscribed" },
];

const PLANS = ["free", "team", "business"];
const LANGUAGES = ["en", "fr", "de", "es"];

function demoEvent(projectId: number, n: number, topicIds: number[], now: number, keyOf: ProfileKeyOf): IdentifyEvent {
  const id = `demo-user-${String(n).padStart(4, "0")}`;
  const event: IdentifyEvent = {
    projectId,
    key: keyOf(projectId, id),
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

/** A demo user's later life: tags on some, a global opt-out on a few, as the users API would write them. */
function demoState(event: IdentifyEvent, n: number): ProfileState {
  const later = { projectId: event.projectId, key: event.key, id: event.id, t: event.t + 1_000 };
  const operations: StateOperation[] = [event];
  if (n % 4 === 0) operations.push({ ...later, op: "tags", add: n % 8 === 0 ? ["beta", "vip"] : ["beta"], remove: [] });
  if (n % 11 === 0) operations.push({ ...later, op: "subscription", unsubscribed: true });
  return operations.map(stateFromOperation).reduce(mergeStates);
}

/** What a demo user did on the site: a visit each, a product viewed by every third. */
function demoTrackedEvents(identify: IdentifyEvent, n: number): TrackedEvent[] {
  const event = (name: string, t: number, data: TrackedEvent["data"]): TrackedEvent => ({
    projectId: identify.projectId,
    key: identify.key,
    userId: identify.id,
    eventId: randomUUID(),
    name,
    data,
    source: "demo",
    t,
    receivedAt: t,
  });
  const visit = event("Visited site", identify.t + 2_000, { path: "/" });
  return n % 3 === 0 ? [visit, event("Viewed Product", identify.t + 30_000, { sku: `SKU-${n % 12}` })] : [visit];
}

/** Topics, profiles (some with topic choices), their events and journeys for a new demo project. */
async function fillDemoProject(tx: Transaction, projectId: number): Promise<void> {
  const topicIds: number[] = [];
  for (const topic of DEMO_TOPICS) topicIds.push((await insertTopic(tx, projectId, newTopicValues(topic))).id);
  const now = Date.now();
  const keyOf = profileKeysWith(await profileKeySecrets(tx, [projectId]));
  const events = Array.from({ length: DEMO_PROFILES }, (_, n) => demoEvent(projectId, n + 1, topicIds, now, keyOf));
  await applyProfileWrites(
    tx,
    events.map((event, n) => ({ projectId, key: event.key, externalId: event.id, state: demoState(event, n + 1) })),
  );
  await storeEventsInTransaction(
    tx,
    events.flatMap((event, n) => demoTrackedEvents(event, n + 1)),
  );
  await importDemoJourneys(tx, projectId);
}

/** The demo project's credentials a caller kept from an earlier run (the launcher does). */
export interface KeptDemoCredentials {
  auth_token: string;
  api_key: string;
}

/** The kept credential when it still works for the project, else null. */
async function stillWorking(tx: Transaction, projectId: number, token: string, kind: CredentialKind) {
  const credential = await findCredential(tx, token);
  // A key kept from a release with fewer permissions (before changes:read) is replaced: the demo's has them all.
  const complete =
    kind !== "api_key" || PERMISSIONS.every((permission) => credential?.permissions.includes(permission));
  return credential !== null && credential.projectId === projectId && credential.kind === kind && complete
    ? token
    : null;
}

/**
 * The project a person trying the service starts from. It is created once. Stored credentials
 * cannot be shown again, so each run issues fresh ones, unless it is given those of an earlier
 * run that still work (the launcher keeps them, so that they do not pile up). The topics and
 * journeys listed are all the project has, those added since it was created included.
 */
export async function demoCommand(sql: Sql, kept: KeptDemoCredentials | null = null) {
  return sql.begin(async (tx) => {
    await takeAdvisoryLock(tx, DEMO_PROJECT_LOCK);
    let project = await findProjectByName(tx, DEMO_PROJECT_NAME);
    if (project === null) {
      project = await createProject(tx, DEMO_PROJECT_NAME);
      await fillDemoProject(tx, project.id);
    }
    const topics = await allTopicsOfProject(tx, project.id);
    const keptToken = kept === null ? null : await stillWorking(tx, project.id, kept.auth_token, "auth_token");
    const keptKey = kept === null ? null : await stillWorking(tx, project.id, kept.api_key, "api_key");
    return {
      project,
      topics: topics.map(({ id, name }) => ({ id, name })),
      journeys: await allJourneysOfProject(tx, project.id),
      auth_token: keptToken ?? (await createCredential(tx, project.id, "auth_token")),
      api_key: keptKey ?? (await createCredential(tx, project.id, "api_key", PERMISSIONS)),
    };
  });
}
