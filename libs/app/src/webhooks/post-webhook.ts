import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import type { LookupFunction } from "node:net";
import { checkWebhookHost, systemResolve, type Resolve } from "./webhook-hosts";

/** Bytes of an answer read before it is dropped: only its status counts. */
const ANSWER_BYTES_READ = 16 * 1024;

export interface WebhookPostSettings {
  allowPrivateNetworks: boolean;
  connectTimeoutMs: number;
  timeoutMs: number;
}

/** How a POST ended: the endpoint's status, or why there was none, in words (never the answer's body). */
export type WebhookAnswer = { status: number } | { error: string };

/**
 * POSTs `body` to `url`: connected only to an address checked (checkWebhookHost), within the
 * connect timeout and the total one (answer included), never following a redirect (a 3xx is the
 * endpoint's answer, and a failure), and reading at most a few KiB of the answer. It never
 * throws: whatever happens is the endpoint's answer or an error in words.
 *
 * The host is resolved once, by the check, and the connection's own lookup answers only the
 * addresses it allowed (in order, the next when one fails, as Node's happy eyeballs do): a name
 * resolving elsewhere by the time the connection is made (DNS rebinding) changes nothing. An IP
 * literal is never looked up by Node: it is dialled as it is, which is the address checked.
 */
export async function postWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  settings: WebhookPostSettings,
  resolveHost: Resolve = systemResolve,
): Promise<WebhookAnswer> {
  const target = new URL(url);
  const host = await checkWebhookHost(target.hostname, settings.allowPrivateNetworks, resolveHost);
  if (!("addresses" in host)) return { error: "refused" in host ? host.refused : host.unresolved };
  const checked = host.addresses;
  const [first] = checked as [(typeof checked)[number]];
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
