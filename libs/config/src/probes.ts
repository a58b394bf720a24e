const PROBE_TIMEOUT_MS = 2_000;

export type ProbeResult = "ok" | "unreachable";

function withTimeout(work: Promise<unknown>): Promise<unknown> {
  return Promise.race([
    work,
    new Promise((_, reject) => setTimeout(() => reject(new Error("probe timed out")), PROBE_TIMEOUT_MS).unref()),
  ]);
}

/**
 * For readiness probes (gateway and worker): runs every check at once and says, by name,
 * whether it answered within two seconds.
 */
export async function probeDependencies<Name extends string>(checks: Record<Name, () => Promise<unknown>>): Promise<Record<Name, ProbeResult>> {
  const names = Object.keys(checks) as Name[];
  const settled = await Promise.allSettled(names.map((name) => withTimeout(checks[name]())));
  return Object.fromEntries(names.map((name, i) => [name, settled[i]?.status === "fulfilled" ? "ok" : "unreachable"])) as Record<Name, ProbeResult>;
}
