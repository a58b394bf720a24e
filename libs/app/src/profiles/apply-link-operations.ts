import { eraseDeadLetters, recordLinkOperations, type Sql } from "@cm/db";
import type { DeleteOperation, LinkOperation, ReidentifyOperation } from "@cm/domain";
import { deleteErasures } from "./apply-delete";
import { newLinkOf, reidentifyErasures } from "./apply-reidentify";
import type { Erasure } from "./erase-profiles";

async function applyInProject(sql: Sql, projectId: number, operations: readonly LinkOperation[]): Promise<Erasure[]> {
  const deletes = operations.filter((operation): operation is DeleteOperation => operation.op === "delete");
  const reidentifies = operations.filter(
    (operation): operation is ReidentifyOperation => operation.op === "reidentify",
  );
  const keys = [...new Set(operations.map((operation) => operation.key))];
  const { links, erasures: recorded } = await recordLinkOperations(
    sql,
    projectId,
    reidentifies.map(newLinkOf),
    deletes,
    keys,
  );
  const erasures = [...deleteErasures(links, deletes), ...reidentifyErasures(links, reidentifies, recorded)];
  await eraseDeadLetters(sql, projectId, [...new Set(erasures.flatMap((erasure) => erasure.keys))]);
  return erasures;
}

/**
 * A job's deletes and reidentifies, per project: the links and erasures recorded and the ids
 * they reach read in one statement under the project's lock, so that the jobs of other workers
 * doing the same take turns (each reads the links and erasures the others write, so an erasure
 * reaches every id linked before it, whichever is applied first); then the dead letters of
 * erased profiles removed. Returns the erasures, for the job's profile write to merge into the
 * erased rows.
 */
export async function applyLinkOperations(sql: Sql, operations: readonly LinkOperation[]): Promise<Erasure[]> {
  const byProject = new Map<number, LinkOperation[]>();
  for (const operation of operations) {
    byProject.set(operation.projectId, [...(byProject.get(operation.projectId) ?? []), operation]);
  }
  const erasures: Erasure[] = [];
  for (const [projectId, inProject] of byProject) {
    erasures.push(...(await applyInProject(sql, projectId, inProject)));
  }
  return erasures;
}
