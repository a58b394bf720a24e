import { expect } from "vitest";

/** One users-API operation with the identify token in the query string, as Vero's clients send it, which must be accepted (200). */
export async function sendAccepted(base: string, authToken: string, path: string, body: object, method = "POST") {
  const response = await fetch(`${base}/api/v2${path}?auth_token=${authToken}`, {
    method,
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(response.status, `${method} ${path}`).toBe(200);
}
