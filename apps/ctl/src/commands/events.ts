import { deleteUserEventsBetween, linkedKeys, profileKeySecrets, type Sql } from "@cm/db";
import { profileKeysWith } from "@cm/domain";
import { CliError, timeOption } from "../cli-error";

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
  const deleted = await deleteUserEventsBetween(
    sql,
    projectId,
    keys,
    timeOption(range, "from"),
    timeOption(range, "to"),
  );
  return { deleted };
}
