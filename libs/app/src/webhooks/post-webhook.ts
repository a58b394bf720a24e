import { lookup } from "node:dns/promises";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { BlockList, isIP, type LookupFunction } from "node:net";

/** Bytes of an answer read before it is dropped: only its status counts. */
const ANSWER_BYTES_READ = 16 * 1024;

/**
 * Addresses an endpoint may not resolve to unless WEBHOOK_ALLOW_PRIVATE_NETWORKS: loopback,
 * private, shared (carrier NAT), link-local (cloud metadata services answer there), unspecified,
 * benchmarking, multicast and reserved, IPv4 and IPv6 (an IPv4-mapped IPv6 address is checked
 * as its IPv4 address; NAT64 and 6to4 ones, which embed one, are refused whole).
 */
const PRIVATE_NETWORKS = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 3],
] as const)
  PRIVATE_NETWORKS.addSubnet(network, prefix, "ipv4");
for (const [network, prefix] of [
  ["::", 96],
  ["64:ff9b::", 96],
  ["64:ff9b:1::", 48],
  ["100::", 64],
  ["2002::", 16],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const)
  PRIVATE_NETWORKS.addSubnet(network, prefix, "ipv6");

export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  return family === 0 || PRIVATE_NETWORKS.check(address, family === 4 ? "ipv4" : "ipv6");
}

export interface WebhookPostSettings {
  allowPrivateNetworks: boolean;
  connectTimeoutMs: number;
  timeoutMs: number;
}

/** How a POST ended: the endpoint's status, or why there was none, in words (never the answer's body). */
export type WebhookAnswer = { status: number } | { error: string };

/**
 * The addresses the URL's host is reached at: resolved once, here, and connected to as checked
 * (in order, the next when one fails, as Node's happy eyeballs do), so that a name resolving
 * elsewhere by the time the connection is made (DNS rebinding) changes nothing. Those allowed, or
 * why none is.
 */
async function checkedAddresses(
  hostname: string,
  allowPrivateNetworks: boolean,
): Promise<{ address: string; family: number }[] | string> {
  const host = hostname.replace(/^\[(.*)\]$/, "$1");
  const addresses = await lookup(host, { all: true, verbatim: true }).catch(
    (error: NodeJS.ErrnoException) => `cannot resolve ${host} (${error.code ?? error.message})`,
  );
  if (typeof addresses === "string") return addresses;
  const allowed = addresses.filter(({ address }) => allowPrivateNetworks || !isPrivateAddress(address));
  return allowed.length > 0
    ? allowed
    : `${host} resolves only to private, loopback or link-local addresses (${addresses.map((a) => a.address).join(", ")}); WEBHOOK_ALLOW_PRIVATE_NETWORKS=true allows them`;
}

/**
 * POSTs `body` to `url`: connected to the address checked, within the connect timeout and the
 * total one (answer included), never following a redirect (a 3xx is the endpoint's answer, and a
 * failure), and reading at most a few KiB of the answer. It never throws: whatever happens is
 * the endpoint's answer or an error in words.
 */
export async function postWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  settings: WebhookPostSettings,
): Promise<WebhookAnswer> {
  const target = new URL(url);
  const checked = await checkedAddresses(target.hostname, settings.allowPrivateNetworks);
  if (typeof checked === "string") return { error: checked };
  const [first] = checked as [{ address: string; family: number }];
  const pinned: LookupFunction = (_hostname, options, callback) => {
    if (options.all) callback(null, checked);
    else callback(null, first.address, first.family);
  };
  return new Promise<WebhookAnswer>((resolve) => {
    const send = target.protocol === "https:" ? httpsRequest : httpRequest;
    const request = send(target, {
      method: "POST",
      headers: { ...headers, "content-length": String(Buffer.byteLength(body)), connection: "close" },
      agent: false,
      lookup: pinned,
    });
    let settled = false;
    const settle = (answer: WebhookAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(total);
      clearTimeout(connecting);
      request.destroy();
      resolve(answer);
    };
    const total = setTimeout(() => settle({ error: `no answer within ${settings.timeoutMs} ms` }), settings.timeoutMs);
    const connecting = setTimeout(
      () => settle({ error: `no connection within ${settings.connectTimeoutMs} ms` }),
      settings.connectTimeoutMs,
    );
    request.on("socket", (socket) => {
      if (socket.connecting) socket.once("connect", () => clearTimeout(connecting));
      else clearTimeout(connecting);
    });
    request.on("error", (error: NodeJS.ErrnoException) => settle({ error: error.code ?? error.message }));
    request.on("response", (answer: IncomingMessage) => {
      const status = answer.statusCode ?? 0;
      let read = 0;
      answer.on("data", (chunk: Buffer) => {
        read += chunk.length;
        if (read >= ANSWER_BYTES_READ) settle({ status });
      });
      answer.on("end", () => settle({ status }));
      answer.on("error", () => settle({ status }));
    });
    request.end(body);
  });
}
