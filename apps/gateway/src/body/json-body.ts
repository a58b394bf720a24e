import { bodyParser } from "@koa/bodyparser";
import { MAX_BODY_BYTES } from "@cm/domain";

/**
 * Reads the body as JSON whatever its content type (integrations do not always label it), up
 * to 256 KiB: more is 413, text that is not JSON is 400 (middleware/errors.ts words both).
 */
export const readJsonBody = bodyParser({
  enableTypes: ["json"],
  detectJSON: () => true,
  jsonLimit: MAX_BODY_BYTES,
  jsonStrict: false,
});
