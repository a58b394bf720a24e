import { changeFeedNow, type Sql } from "@cm/db";
import { positionBefore, type ChangePosition } from "@cm/domain";
import { layoutTimeout } from "./database";
import { waitFor } from "./wait";

/**
 * Until the change feed reads every change committed before now (libs/db readChanges): on one
 * Postgres once every transaction older than one begun now has ended (other test files share the
 * server, and hold its horizon back), on Citus once the epoch current now is closed.
 */
export async function feedSettled(sql: Sql): Promise<void> {
  const [now] = await sql<{ epoch: string | null; xid: string }[]>`
    SELECT (SELECT epoch FROM change_epochs)::text AS epoch, pg_current_xact_id()::text AS xid`;
  const end: ChangePosition =
    now?.epoch === null || now === undefined
      ? { epoch: "0", t: "0", node: "0", xid: now?.xid ?? "0", seq: "1" }
      : { epoch: String(BigInt(now.epoch) + 1n), t: "0", node: "0", xid: "0", seq: "0" };
  await waitFor(
    "the feed to read every change committed before now",
    async () => (positionBefore(await changeFeedNow(sql), end) ? undefined : true),
    layoutTimeout(15_000),
  );
}
