import { connect, createServer } from "node:net";

/** A server `npm start` runs itself when none answers where the children would look for one. */
export interface LocalServer {
  url: string;
  stop(): Promise<void>;
}

/** Whether a server accepts connections there, whatever server it is. */
export function answers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 1000 });
    const settle = (answered: boolean) => {
      socket.destroy();
      resolve(answered);
    };
    socket.once("connect", () => settle(true));
    socket.once("timeout", () => settle(false));
    socket.once("error", () => settle(false));
  });
}

function listenOn(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      const { port: bound } = server.address() as { port: number };
      server.close(() => resolve(bound));
    });
  });
}

/**
 * `preferred` when it is free on 127.0.0.1, else one the system picks: nothing answering there
 * does not mean nothing holds it (a server that is starting, or not listening on 127.0.0.1).
 */
export function freePortOr(preferred: number): Promise<number> {
  return listenOn(preferred).catch(() => listenOn(0));
}
