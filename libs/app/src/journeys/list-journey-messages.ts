import { journeyMessagesJson } from "@cm/db";
import type { Store } from "../deps";
import type { JsonText, Message } from "@cm/domain";
import { NotFound } from "../errors";

/** api.md "List messages of a journey": the metadata of each message node's message. */
export async function listJourneyMessages(deps: Store, projectId: number, id: number): Promise<JsonText<Message[]>> {
  const messages = await journeyMessagesJson(deps.sql, projectId, id);
  if (messages === null) throw new NotFound("journey");
  return messages;
}
