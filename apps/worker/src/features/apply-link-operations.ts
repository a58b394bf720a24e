import { eraseDeadLetters, linkedComponents, recordLinkOperations, type Db, type Sql } from "@cm/db";
import type { DeleteOperation, ReidentifyOperation } from "@cm/domain";
import { deleteErasures } from "./apply-delete";
import { linkOf, reidentifyErasures } from "./apply-reidentify";
import type { Erasure } from "./erase-profiles";

/** The operations that change which rows make a profile, or erase them. */
export type LinkOperation = DeleteOperation | ReidentifyOperation;

async function applyInProject(tx: Db, projectId: number, operations: readonly LinkOperation[]): Promise<Erasure[]> {
  const deletes = operations.filter((operation): operation is DeleteOperation => operation.op === "delete");
  const reidentifies = operations.filter(
    (operation): operation is ReidentifyOperation => operation.op === "reidentify",
  );
  await recordLinkOperations(tx, projectId, reidentifies.map(linkOf), deletes);
  const keys = [...new Set(operations.map((operation) => operation.key))];
  const { links, erasures: recorded } = await linkedComponents(tx, projectId, keys);
  const erasures = [...deleteErasures(links, deletes), ...reidentifyErasures(links, reidentifies, recorded)];
  await eraseDeadLetters(tx, projectId, [...new Set(erasures.flatMap((erasure) => erasure.keys))]);
  return erasures;
}

/**
 * A job's deletes and reidentifies: one transaction per project, of three statements, holding
 * the project's lock so that the jobs of other workers doing the same take turns (each reads the links and erasures
 * the others write, so an erasure reaches every id linked before it, whichever is applied
 * first), and the dead letters of erased profiles removed. Returns the erasures, for the
 * job's profile write to merge into the erased rows.
 */
export async function applyLinkOperations(sql: Sql, operations: readonly LinkOperation[]): Promise<Erasure[]> {
  const byProject = new Map<number, LinkOperation[]>();
  for (const operation of operations) {
    byProject.set(operation.projectId, [...(byProject.get(operation.projectId) ?? []), operation]);
  }
  const erasures: Erasure[] = [];
  for (const [projectId, inProject] of byProject) {
    const applied = await sql.begin((tx) => applyInProject(tx, projectId, inProject));
    erasures.push(...applied);
  }
  return erasures;
}
