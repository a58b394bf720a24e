/** The setting that lets endpoints reach the operator's own networks (libs/config, docs/webhooks.md). */
export const PRIVATE_NETWORKS_SWITCH = "WEBHOOK_ALLOW_PRIVATE_NETWORKS";

/** An IP address as bytes: 4 of them for IPv4, 16 for IPv6. */
type Bytes = readonly number[];

function ipv4Bytes(text: string): number[] | null {
  const parts = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text)?.slice(1).map(Number);
  return parts !== undefined && parts.every((part) => part <= 255) ? parts : null;
}

function ipv6Bytes(text: string): number[] | null {
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const groupsOf = (half: string | undefined) => (half === undefined || half === "" ? [] : half.split(":"));
  const words = (groups: string[]) => {
    const last = groups.at(-1);
    const v4 = last?.includes(".") ? ipv4Bytes(last) : undefined;
    if (v4 === null) return null;
    const hex = v4 === undefined ? groups : groups.slice(0, -1);
    if (!hex.every((group) => /^[0-9a-f]{1,4}$/i.test(group))) return null;
    const values = hex.map((group) => parseInt(group, 16));
    return v4 === undefined ? values : [...values, (v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!];
  };
  const head = words(groupsOf(halves[0]));
  const tail = words(groupsOf(halves[1]));
  if (head === null || tail === null) return null;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  return [...head, ...Array<number>(missing).fill(0), ...tail].flatMap((word) => [word >> 8, word & 0xff]);
}

/**
 * The IP address `host` spells, or null when it is a name. Spelled as a URL's host is read
 * (WHATWG): 2130706433, 0x7f.1 and 0177.0.0.1 are 127.0.0.1, a trailing dot is dropped; IPv6 in
 * brackets or not, with a zone id (`%eth0`) or not, in any case. `text` is its usual spelling.
 */
export function ipAddressOf(host: string): { bytes: Bytes; text: string } | null {
  let bare = host.replace(/^\[(.*)\]$/, "$1");
  if (bare.includes(":")) bare = `[${bare.replace(/%.*$/, "")}]`;
  if (/[/?#@\\\s]/.test(bare)) return null;
  let hostname: string;
  try {
    hostname = new URL(`http://${bare}/`).hostname;
  } catch {
    return null;
  }
  const bytes = hostname.startsWith("[") ? ipv6Bytes(hostname.slice(1, -1)) : ipv4Bytes(hostname);
  return bytes === null ? null : { bytes, text: hostname.replace(/^\[(.*)\]$/, "$1") };
}

/** A range webhooks do not reach by default, from IANA's special-purpose address registries (and multicast). */
interface SpecialRange {
  /** As the registry writes it. */
  range: string;
  /** What it is for, in the registry's words. */
  purpose: string;
  /** A network of the operator's own: PRIVATE_NETWORKS_SWITCH lets endpoints reach it. */
  private?: true;
  /** Bytes of its addresses that hold an IPv4 address, which is what is reached, so what is checked. */
  embedsIpv4At?: number;
}

/**
 * The IPv4 and IPv6 special-purpose registries' entries (the narrower entries inside
 * 192.0.0.0/24 and 2001::/23 fall under them), with multicast and, for IPv6, anything outside
 * the global unicast space 2000::/3 (below). Only loopback, private-use, shared and unique-local
 * networks are the operator's own: link-local holds cloud metadata services, and the rest hold
 * no receiver.
 */
const SPECIAL_RANGES: readonly SpecialRange[] = [
  { range: "0.0.0.0/8", purpose: "this network" },
  { range: "10.0.0.0/8", purpose: "private-use", private: true },
  { range: "100.64.0.0/10", purpose: "shared address space", private: true },
  { range: "127.0.0.0/8", purpose: "loopback", private: true },
  { range: "169.254.0.0/16", purpose: "link-local" },
  { range: "172.16.0.0/12", purpose: "private-use", private: true },
  { range: "192.0.0.0/24", purpose: "IETF protocol assignments" },
  { range: "192.0.2.0/24", purpose: "documentation" },
  { range: "192.31.196.0/24", purpose: "AS112" },
  { range: "192.52.193.0/24", purpose: "AMT" },
  { range: "192.88.99.0/24", purpose: "6to4 relay anycast" },
  { range: "192.168.0.0/16", purpose: "private-use", private: true },
  { range: "192.175.48.0/24", purpose: "AS112 direct delegation" },
  { range: "198.18.0.0/15", purpose: "benchmarking" },
  { range: "198.51.100.0/24", purpose: "documentation" },
  { range: "203.0.113.0/24", purpose: "documentation" },
  { range: "224.0.0.0/4", purpose: "multicast" },
  { range: "255.255.255.255/32", purpose: "limited broadcast" },
  { range: "240.0.0.0/4", purpose: "reserved" },
  { range: "::/128", purpose: "unspecified" },
  { range: "::1/128", purpose: "loopback", private: true },
  { range: "::ffff:0:0/96", purpose: "IPv4-mapped", embedsIpv4At: 12 },
  { range: "64:ff9b::/96", purpose: "IPv4/IPv6 translation", embedsIpv4At: 12 },
  { range: "64:ff9b:1::/48", purpose: "local-use IPv4/IPv6 translation" },
  { range: "100::/64", purpose: "discard-only" },
  { range: "100:0:0:1::/64", purpose: "dummy prefix" },
  { range: "2001:db8::/32", purpose: "documentation" },
  { range: "2001::/23", purpose: "IETF protocol assignments" },
  { range: "2002::/16", purpose: "6to4", embedsIpv4At: 2 },
  { range: "2620:4f:8000::/48", purpose: "AS112 direct delegation" },
  { range: "3fff::/20", purpose: "documentation" },
  { range: "5f00::/16", purpose: "segment routing SIDs" },
  { range: "fc00::/7", purpose: "unique-local", private: true },
  { range: "fe80::/10", purpose: "link-local" },
  { range: "fec0::/10", purpose: "site-local" },
  { range: "ff00::/8", purpose: "multicast" },
];

const networkOf = (range: string) => {
  const [address, prefix] = range.split("/") as [string, string];
  return { bytes: ipAddressOf(address)!.bytes, prefix: Number(prefix) };
};
const SPECIAL_NETWORKS = SPECIAL_RANGES.map((special) => ({ ...special, ...networkOf(special.range) }));
const GLOBAL_UNICAST_V6 = networkOf("2000::/3");

function inNetwork(bytes: Bytes, network: { bytes: Bytes; prefix: number }): boolean {
  if (bytes.length !== network.bytes.length) return false;
  for (let bit = 0; bit < network.prefix; bit += 1) {
    const mask = 0x80 >> (bit % 8);
    if ((bytes[bit >> 3]! & mask) !== (network.bytes[bit >> 3]! & mask)) return false;
  }
  return true;
}

/** Why an address is refused: `private` when PRIVATE_NETWORKS_SWITCH would allow it. */
export interface AddressRefusal {
  address: string;
  why: string;
  private: boolean;
}

/** What an address is checked against: the setting, and the addresses of the host that dials it. */
export interface AddressRules {
  allowPrivateNetworks: boolean;
  ownAddresses: readonly string[];
}

/**
 * Only an IPv4-mapped address is dialled as the IPv4 address it holds: a NAT64 or 6to4 one goes
 * out as IPv6, to a translator, where no operator's private network is.
 */
const MAPPED = "::ffff:0:0/96";

function refusalOf(bytes: Bytes, own: readonly Bytes[]): Omit<AddressRefusal, "address"> | null {
  const special = SPECIAL_NETWORKS.find((network) => inNetwork(bytes, network));
  if (special?.private) return { why: `in ${special.range} (${special.purpose})`, private: true };
  // The host's own addresses, whatever range they are in: the switch allows them as it allows loopback.
  if (own.some((address) => address.length === bytes.length && address.every((byte, i) => byte === bytes[i])))
    return { why: "an address of this host", private: true };
  if (special?.embedsIpv4At !== undefined) {
    const embedded = refusalOf(bytes.slice(special.embedsIpv4At, special.embedsIpv4At + 4), own);
    if (embedded === null) return null;
    const why = `${embedded.why}, within ${special.range} (${special.purpose})`;
    return { why, private: embedded.private && special.range === MAPPED };
  }
  if (special !== undefined) return { why: `in ${special.range} (${special.purpose})`, private: false };
  if (bytes.length === 16 && !inNetwork(bytes, GLOBAL_UNICAST_V6))
    return { why: "outside 2000::/3 (global unicast)", private: false };
  return null;
}

/**
 * Why a webhook may not be delivered to `address`, or null when it may: any special-purpose
 * address (an IPv4 address embedded in an IPv6 one, mapped, NAT64 or 6to4, as that IPv4 address)
 * and any of the dialling host's own addresses, which reach its services as loopback does. With
 * `allowPrivateNetworks`, the operator's own networks and the host's addresses are allowed.
 */
export function addressRefusal(address: string, rules: AddressRules): AddressRefusal | null {
  const ip = ipAddressOf(address);
  if (ip === null) return { address, why: "not an IP address", private: false };
  const own = rules.ownAddresses.map((text) => ipAddressOf(text)?.bytes).filter((bytes) => bytes !== undefined);
  const refusal = refusalOf(ip.bytes, own);
  if (refusal === null || (refusal.private && rules.allowPrivateNetworks)) return null;
  return { address: ip.text, ...refusal };
}

/**
 * Why `host` is not delivered to, in words, from the refusals of the addresses it is or
 * resolves to (none of them allowed): each address and why, and whether the switch would help.
 */
export function hostRefusalText(host: string, refusals: readonly AddressRefusal[]): string {
  const [only] = refusals;
  const each = refusals.map((refusal) => `${refusal.address} is ${refusal.why}`).join(", ");
  const reasons =
    refusals.length === 1 && ipAddressOf(host)?.text === only?.address
      ? each
      : `${host} resolves only to addresses webhooks do not reach: ${each}`;
  return refusals.some((refusal) => refusal.private)
    ? `${reasons}; ${PRIVATE_NETWORKS_SWITCH}=true allows loopback, private-use, shared and unique-local networks and the host's own addresses`
    : `${reasons}, which no setting allows`;
}
