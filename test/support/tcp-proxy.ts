import { createServer, connect, type AddressInfo, type Server, type Socket } from "node:net";

/**
 * A TCP proxy in front of a real service, so a test can cut the service off (every connection
 * dropped, new ones refused) and bring it back, without touching the shared server.
 */
export class TcpProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  /** The proxy's own connections to the service. */
  private readonly upstreams = new Set<Socket>();
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(port = 0): Promise<number> {
    const server = createServer((client) => {
      const upstream = connect(this.targetPort, this.targetHost);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on("close", () => this.sockets.delete(socket));
        socket.on("error", () => socket.destroy());
      }
      this.upstreams.add(upstream);
      upstream.on("close", () => this.upstreams.delete(upstream));
      client.pipe(upstream).pipe(client);
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    return this.port;
  }

  /**
   * What the service sends is no longer passed on, but held (what clients send still reaches it):
   * a link that lags. cut() then drops what is held, undelivered.
   */
  hold(): void {
    for (const upstream of this.upstreams) {
      upstream.unpipe();
      upstream.pause();
    }
  }

  /** Drops every connection and stops listening: the service looks down. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const socket of this.sockets) socket.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Listens again on the same port: the service is back. */
  async restore(): Promise<void> {
    if (this.server === null) await this.start(this.port);
  }
}
