import { constants, networkInterfaces, type NetworkInterfaceInfo } from "node:os";

interface TcpHandle {
  connect(...args: unknown[]): number;
  connect6(...args: unknown[]): number;
}

/** This host's addresses but loopback: none on a host whose only interface is loopback (a network namespace). */
export function hostAddresses(): NetworkInterfaceInfo[] {
  return Object.values(networkInterfaces())
    .flatMap((addresses) => addresses ?? [])
    .filter(({ internal }) => !internal);
}

/** TCP connections the guard let through and those it refused, by address, in order. */
export interface ConnectGuard {
  dialled: string[];
  refused: string[];
  release(): void;
}

/**
 * Guards every TCP connection of this process, as the SSRF attack's machine did: one to an
 * address not of this machine (loopback, or an address of its interfaces) is refused before a
 * packet leaves, as if refused by the peer (ECONNREFUSED), and noted. Node connects through the
 * TCP handle once the address is resolved and chosen, so what the guard sees is the address
 * actually dialled. A test of webhook address checks runs under it, so that a check that lets an
 * address through reaches nothing off this machine.
 */
export function ownAddressesOnly(): ConnectGuard {
  const binding = (process as unknown as { binding(name: string): { TCP: { prototype: TcpHandle } } }).binding;
  const { prototype } = binding("tcp_wrap").TCP;
  const own = new Set(
    Object.values(networkInterfaces()).flatMap((addresses) =>
      (addresses ?? []).map(({ address }) => address.split("%")[0]!.toLowerCase()),
    ),
  );
  const guard: ConnectGuard = { dialled: [], refused: [], release: () => undefined };
  const originals = { connect: prototype.connect, connect6: prototype.connect6 };
  for (const name of ["connect", "connect6"] as const) {
    const original = originals[name];
    prototype[name] = function (this: TcpHandle, request: unknown, address: string, ...rest: unknown[]) {
      const plain = address.toLowerCase().replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, "");
      if (own.has(plain) || plain.startsWith("127.")) {
        guard.dialled.push(plain);
        return original.call(this, request, address, ...rest);
      }
      guard.refused.push(plain);
      return -constants.errno.ECONNREFUSED;
    };
  }
  guard.release = () => Object.assign(prototype, originals);
  return guard;
}
