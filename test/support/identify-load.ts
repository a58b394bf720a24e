export interface LoadOutcome {
  /** User ids of the identifies answered 200. */
  acknowledged: string[];
  statuses: Set<number>;
  slowestMs: number;
}

/** `clients` callers sending identifies one after another until `until` (ms since the epoch). */
export async function identifyLoad(
  baseUrl: string,
  token: string,
  label: string,
  clients: number,
  until: number,
): Promise<LoadOutcome> {
  const outcome: LoadOutcome = { acknowledged: [], statuses: new Set(), slowestMs: 0 };
  let n = 0;
  const client = async () => {
    while (Date.now() < until) {
      const id = `${label}-${n++}`;
      const started = Date.now();
      const response = await fetch(`${baseUrl}/api/v2/users/track?auth_token=${token}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ id, data: { n } }),
      });
      outcome.slowestMs = Math.max(outcome.slowestMs, Date.now() - started);
      outcome.statuses.add(response.status);
      if (response.status === 200) outcome.acknowledged.push(id);
    }
  };
  await Promise.all(Array.from({ length: clients }, client));
  return outcome;
}
