import { createCipheriv, createDecipheriv, createHmac, randomBytes } from "node:crypto";

/**
 * Webhooks are signed as Standard Webhooks (and Svix) sign them: a secret is `whsec_` and its key
 * in base64, and a message's `webhook-signature` header holds `v1,` and the base64 HMAC-SHA256 of
 * `<webhook-id>.<webhook-timestamp>.<body>` under each secret in use, separated by spaces
 * (docs/webhooks.md).
 */
const SECRET_PREFIX = "whsec_";

export function newSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString("base64");
}

/** The `webhook-signature` header of one message: one signature per secret (two during a rotation). */
export function webhookSignature(
  secrets: readonly string[],
  messageId: string,
  timestampS: number,
  body: string,
): string {
  return secrets
    .map((secret) => {
      const key = Buffer.from(secret.slice(SECRET_PREFIX.length), "base64");
      return `v1,${createHmac("sha256", key).update(`${messageId}.${timestampS}.${body}`).digest("base64")}`;
    })
    .join(" ");
}

const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * A signing secret as it is stored: AES-256-GCM under the service's key (WEBHOOK_SECRET_KEY),
 * since an HMAC needs the secret itself and it cannot be hashed as credentials are. The bytes
 * are the random IV, the authentication tag, then the ciphertext.
 */
export function sealSecret(key: Buffer, secret: string): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const sealed = Buffer.concat([cipher.update(secret, "utf8"), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]);
}

/** The secret `sealSecret` sealed; throws when it was sealed under another key or altered. */
export function openSecret(key: Buffer, sealed: Uint8Array): string {
  const bytes = Buffer.from(sealed);
  const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(0, IV_BYTES));
  decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
}
