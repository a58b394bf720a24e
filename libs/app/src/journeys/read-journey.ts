import { journeyJson } from "@cm/db";
import type { Store } from "../deps";
import type { Journey, JsonText } from "@cm/domain";
import { NotFound } from "../errors";

/** api.md "Get a journey": the journey with its whole graph. */
export async function readJourney(deps: Store, projectId: number, id: number): Promise<JsonText<Journey>> {
  const journey = await journeyJson(deps.sql, projectId, id);
  if (journey === null) throw new NotFound("journey");
  return journey;
}
