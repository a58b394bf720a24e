import { lookup } from "node:dns/promises";
import { networkInterfaces } from "node:os";
import { addressRefusal, hostRefusalText, ipAddressOf, type AddressRefusal } from "@cm/domain";

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to its addresses, as connecting to it would: the system's resolver, or a test's. */
export type Resolve = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolve: Resolve = (hostname) => lookup(hostname, { all: true, verbatim: true });

/** Every address of this host's interfaces, read at each check (an interface may come or go). */
function ownAddresses(): string[] {
  return Object.values(networkInterfaces()).flatMap((addresses) => (addresses ?? []).map(({ address }) => address));
}

/**
 * A URL's host as a webhook may reach it: the addresses it may be connected to (resolved once,
 * here: those are the ones to dial, never the name again), why it may not be reached, or why it
 * did not resolve.
 */
export type CheckedHost = { addresses: ResolvedAddress[] } | { refused: string } | { unresolved: string };

/**
 * Checks `hostname` (a URL's: an IP literal as WHATWG reads it, or a name) against the address
 * rules of libs/domain `addressRefusal`: a literal as it is, a name by every address it resolves
 * to, keeping those allowed.
 */
export async function checkWebhookHost(
  hostname: string,
  allowPrivateNetworks: boolean,
  resolve: Resolve,
): Promise<CheckedHost> {
  const rules = { allowPrivateNetworks, ownAddresses: ownAddresses() };
  const literal = ipAddressOf(hostname);
  if (literal !== null) {
    const refusal = addressRefusal(literal.text, rules);
    return refusal === null
      ? { addresses: [{ address: literal.text, family: literal.bytes.length === 4 ? 4 : 6 }] }
      : { refused: hostRefusalText(literal.text, [refusal]) };
  }
  const resolved = await resolve(hostname).catch(
    (error: NodeJS.ErrnoException) => `cannot resolve ${hostname} (${error.code ?? error.message})`,
  );
  if (typeof resolved === "string") return { unresolved: resolved };
  if (resolved.length === 0) return { unresolved: `cannot resolve ${hostname} (no address)` };
  const refusals: AddressRefusal[] = [];
  const allowed = resolved.filter(({ address }) => {
    const refusal = addressRefusal(address, rules);
    if (refusal !== null) refusals.push(refusal);
    return refusal === null;
  });
  return allowed.length > 0 ? { addresses: allowed } : { refused: hostRefusalText(hostname, refusals) };
}
