import type { Duplex } from "node:stream";

/**
 * Requests Node refuses before Koa sees them (headers over 16 KiB, a 100 KB query string,
 * headers or a request slower than HTTP_HEADERS_TIMEOUT_MS / HTTP_REQUEST_TIMEOUT_MS,
 * malformed HTTP) get the identify error shape, the API's most common caller, instead of
 * Node's bare status line.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === "ECONNRESET" || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, message] =
    error.code === "HPE_HEADER_OVERFLOW"
      ? [431, "Request Header Fields Too Large"]
      : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? [408, "Request Timeout"]
        : [400, "Bad Request"];
  const body = JSON.stringify({ status, message });
  socket.end(
    `HTTP/1.1 ${status} ${message}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
