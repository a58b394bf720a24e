import { deleteUserEventsBetween, linkedKeys, profileKeySecrets, type Sql } from "@cm/db";
import { parseTimestamp, profileKeysWith } from "@cm/domain";
import { CliError } from "../cli-error";

function bound(name: string, text: string | undefined): Date | null {
  if (text === undefined) return null;
  const ms = parseTimestamp(text);
  if (ms === null)
    throw new CliError(`--${name} must be an ISO 8601 date-time with a time zone, or Unix time in seconds`, 2);
  return new Date(ms);
}

/**
 * `events delete`: the events of a user (and of every id linked with it by a reidentify) that
 * happened in [from, to), or all of them without bounds. Events still queued are not reached:
 * a delete of the user (users/delete) is what erases those.
 */
export async function deleteEventsCommand(
  sql: Sql,
  projectId: number,
  userId: string,
  range: { from?: string; to?: string },
) {
  const secrets = await profileKeySecrets(sql, [projectId]);
  if (!secrets.has(projectId)) throw new CliError(`project ${projectId} does not exist`);
  const keys = await linkedKeys(sql, projectId, profileKeysWith(secrets)(projectId, userId));
  const deleted = await deleteUserEventsBetween(sql, projectId, keys, bound("from", range.from), bound("to", range.to));
  return { deleted };
}
