import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { insertJourney, journeyJson, lockJourney, projectExists, updateJourneyStatus, type Db, type Sql } from "@cm/db";
import {
  allowedTransitions,
  canTransition,
  describeTypiaErrors,
  isJourneyStatus,
  JOURNEY_STATUSES,
  journeyFileProblems,
  jsonValueProblems,
  problemText,
  type JourneyFile,
} from "@cm/domain";
import typia from "typia";
import { CliError } from "../cli-error";

const validateJourneyFile = typia.createValidate<JourneyFile>();

/** From apps/ctl/src/commands under vitest and apps/ctl/dist/commands once built. */
const DEMO_JOURNEYS_DIR = join(__dirname, "..", "..", "fixtures", "journeys");

/** A journey file, checked against the file shape, the graph rules and what Postgres can store. */
export async function readJourneyFile(path: string): Promise<JourneyFile> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(path, "utf8"));
  } catch (error) {
    throw new CliError(`cannot read ${path}: ${(error as Error).message}`);
  }
  const result = validateJourneyFile(json);
  if (!result.success) {
    throw new CliError(`${path} is not a journey: ${problemText(describeTypiaErrors(result.errors, "journey"))}`);
  }
  const problems = [...jsonValueProblems(json), ...journeyFileProblems(result.data)];
  if (problems.length > 0) throw new CliError(`${path}: journey refused: ${problemText(problems)}`);
  return result.data;
}

/** The journey as `GET /journeys/{id}` returns it. */
async function journeyResource(sql: Db, projectId: number, journeyId: number): Promise<unknown> {
  return JSON.parse((await journeyJson(sql, projectId, journeyId)) as string);
}

/** `journey import --project ID FILE` */
export async function importJourneyCommand(sql: Sql, projectId: number, files: string[]) {
  const [path, ...extra] = files;
  if (path === undefined || extra.length > 0) throw new CliError("journey import takes exactly one FILE", 2);
  const file = await readJourneyFile(path);
  if (!(await projectExists(sql, projectId))) throw new CliError(`project ${projectId} does not exist`);
  return sql.begin(async (tx) => journeyResource(tx, projectId, await insertJourney(tx, projectId, file)));
}

/** `journey status --id ID --status S`; setting the status a journey already has changes nothing. */
export async function journeyStatusCommand(sql: Sql, journeyId: number, status: string) {
  if (!isJourneyStatus(status)) throw new CliError(`--status must be one of ${JOURNEY_STATUSES.join(", ")}`, 2);
  return sql.begin(async (tx) => {
    const journey = await lockJourney(tx, journeyId);
    if (journey === null) throw new CliError(`journey ${journeyId} does not exist`);
    if (!canTransition(journey.status, status)) {
      const allowed = allowedTransitions(journey.status).join(", ");
      throw new CliError(`journey ${journeyId} cannot go from ${journey.status} to ${status} (allowed: ${allowed})`);
    }
    if (journey.status !== status) await updateJourneyStatus(tx, journeyId, status);
    return journeyResource(tx, journey.projectId, journeyId);
  });
}

/** The demo project's journeys: every fixture file, in name order. */
export async function importDemoJourneys(sql: Db, projectId: number): Promise<void> {
  const names = (await readdir(DEMO_JOURNEYS_DIR)).filter((name) => name.endsWith(".json")).sort();
  for (const name of names) await insertJourney(sql, projectId, await readJourneyFile(join(DEMO_JOURNEYS_DIR, name)));
}
