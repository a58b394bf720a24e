import { profileKeySecrets, type Sql } from "@cm/db";
import { profileKeysWith } from "@cm/domain";
import type { Queue } from "bullmq";
import { drained } from "./queue";
import { waitFor } from "./wait";

// The load of the Redis failover tests (test/faults/redis-failover*.test.ts), and what it finds
// applied afterwards.

const CLIENTS = 6;

/** What the load sent and was told: the users whose identify and whose event were answered 200. */
export interface Load {
  identified: string[];
  tracked: string[];
  statuses: Record<number, number>;
  /** Answers 200 to requests sent once the new primary was promoted. */
  acceptedAfterPromotion: number;
  /** The longest any request waited for its answer: what a failover held costs its callers. */
  slowestMs: number;
}

/**
 * `CLIENTS` callers sending, one after another, an identify, an event and a batch of one of each,
 * until `running.on` turns false; `load` counts as they go.
 */
export async function sendLoad(
  base: string,
  token: string,
  label: string,
  running: { on: boolean; promotedAt: number },
  load: Load,
) {
  let n = 0;
  const send = async (path: string, body: object, identified: string[], tracked: string[]) => {
    const sentAt = Date.now();
    const response = await fetch(`${base}/api/v2${path}?auth_token=${token}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    load.statuses[response.status] = (load.statuses[response.status] ?? 0) + 1;
    load.slowestMs = Math.max(load.slowestMs, Date.now() - sentAt);
    if (response.status !== 200) return;
    load.identified.push(...identified);
    load.tracked.push(...tracked);
    if (sentAt > running.promotedAt) load.acceptedAfterPromotion += 1;
  };
  const client = async () => {
    while (running.on) {
      const id = `${label}-${n++}`;
      await send("/users/track", { id: `${id}-i`, data: { n } }, [`${id}-i`], []);
      await send("/events/track", { identity: { id: `${id}-e` }, event_name: "failover" }, [], [`${id}-e`]);
      const batch = [
        { type: "identify", id: `${id}-bi`, data: { n } },
        { type: "track", identity: { id: `${id}-be` }, event_name: "failover" },
      ];
      await send("/batch", { batch }, [`${id}-bi`], [`${id}-be`]);
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, client));
}

/** Of the acknowledged operations, those not applied, and those applied more than once (an event stored twice). */
export async function tally(sql: Sql, projectId: number, load: Load) {
  const keyOf = profileKeysWith(await profileKeySecrets(sql, [projectId]));
  const profiles = new Set(
    (await sql<{ key: string }[]>`SELECT key FROM profiles WHERE project_id = ${projectId}`).map((row) => row.key),
  );
  const events = new Map(
    (
      await sql<{ user_key: string; n: number }[]>`
        SELECT user_key, count(*)::integer AS n FROM events WHERE project_id = ${projectId} GROUP BY user_key`
    ).map((row) => [row.user_key, row.n]),
  );
  return {
    acknowledged: load.identified.length + load.tracked.length,
    lost: [
      ...load.identified.filter((id) => !profiles.has(keyOf(projectId, id))),
      ...load.tracked.filter((id) => !events.has(keyOf(projectId, id))),
    ],
    twice: load.tracked.filter((id) => (events.get(keyOf(projectId, id)) ?? 0) > 1),
  };
}

/** The line a failover test prints: what its load was answered, and what of it was lost or applied twice. */
export function failoverSummary(
  label: string,
  outcome: Awaited<ReturnType<typeof tally>>,
  sent: Load,
  promotedAfterMs: number,
): string {
  return (
    `${label}: ${outcome.acknowledged} operations answered 200, ${outcome.lost.length} lost, ` +
    `${outcome.twice.length} applied twice; answers ${JSON.stringify(sent.statuses)}, the slowest in ${sent.slowestMs} ms; ` +
    `replica promoted ${promotedAfterMs} ms after the kill`
  );
}

/**
 * Once the new primary is promoted (and the old one restarted as its replica): waits for 20
 * operations answered 200 by it, stops the load, lets the worker apply what the paused `queues`
 * hold, and tallies what was lost or applied twice.
 */
export async function finishAfterPromotion(
  load: Promise<void>,
  running: { on: boolean },
  sent: Load,
  queues: Queue[],
  stack: { db: { sql: Sql }; project: { id: number } },
) {
  await waitFor(
    "200s from the promoted primary",
    async () => (sent.acceptedAfterPromotion >= 20 ? true : undefined),
    60_000,
  );
  running.on = false;
  await load;
  await Promise.all(queues.map((queue) => queue.resume()));
  await drained(queues, 60_000);
  return tally(stack.db.sql, stack.project.id, sent);
}
