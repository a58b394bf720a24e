const PROBE_TIMEOUT_MS = 2_000;

/** "ok", or why not: "unreachable" (an error or no answer within two seconds), or a reason a check gave. */
export type ProbeResult = string;

/** A check that reached its dependency and found it unfit for traffic: the message is the reason. */
export class NotReady extends Error {}

function withTimeout(work: Promise<unknown>): Promise<unknown> {
  return Promise.race([
    work,
    new Promise((_, reject) => setTimeout(() => reject(new Error("probe timed out")), PROBE_TIMEOUT_MS).unref()),
  ]);
}

/** For readiness probes (gateway and worker): runs every check at once and says, by name, how it went. */
export async function probeDependencies<Name extends string>(
  checks: Record<Name, () => Promise<unknown>>,
): Promise<Record<Name, ProbeResult>> {
  const names = Object.keys(checks) as Name[];
  const settled = await Promise.allSettled(names.map((name) => withTimeout(checks[name]())));
  const result = (outcome: PromiseSettledResult<unknown> | undefined): ProbeResult => {
    if (outcome?.status === "fulfilled") return "ok";
    return outcome?.reason instanceof NotReady ? outcome.reason.message : "unreachable";
  };
  return Object.fromEntries(names.map((name, i) => [name, result(settled[i])])) as Record<Name, ProbeResult>;
}
