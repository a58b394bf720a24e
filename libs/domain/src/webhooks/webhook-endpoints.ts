import { CHANGE_TYPES } from "../changes/change-feed";
import type { Problem } from "../kernel/problems";

/** Longer URLs are refused: an endpoint is an operator's address, not a place for data. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;

/**
 * What keeps `text` from being a webhook endpoint's URL: it is http or https, without user
 * information (a receiver authenticates the sender by its signature) and not too long. Whether
 * its host may be reached is decided when it is delivered to, address by address.
 */
export function webhookUrlProblems(text: string): Problem[] {
  if (text.length > MAX_WEBHOOK_URL_LENGTH)
    return [{ path: "url", message: `url must be at most ${MAX_WEBHOOK_URL_LENGTH} characters` }];
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return [{ path: "url", message: "url must be an absolute http or https URL" }];
  }
  const problems: Problem[] = [];
  if (url.protocol !== "http:" && url.protocol !== "https:")
    problems.push({ path: "url", message: "url must be an http or https URL" });
  if (url.username !== "" || url.password !== "")
    problems.push({
      path: "url",
      message: "url must not hold a user name or password (the signature authenticates us)",
    });
  return problems;
}

/** What keeps `types` from being an endpoint's change types: each one the feed carries (null: all of them). */
export function webhookTypesProblems(types: readonly string[] | null): Problem[] {
  const unknown = (types ?? []).filter((type) => !(CHANGE_TYPES as readonly string[]).includes(type));
  if (types?.length === 0) return [{ path: "types", message: "types must name at least one change type" }];
  return unknown.length === 0
    ? []
    : [
        {
          path: "types",
          message: `unknown change type ${unknown.map((type) => JSON.stringify(type)).join(", ")} (known: ${CHANGE_TYPES.join(", ")})`,
        },
      ];
}

/**
 * An endpoint's URL as the API shows it: its origin, and `/***` for whatever follows, since
 * receivers take their token in the path (Slack's, Discord's, webhook.site's), the query or the
 * fragment, and a key that may read the list need not hold it. A URL never holds a user name or
 * password (webhookUrlProblems).
 */
export function shownWebhookUrl(text: string): string {
  const url = new URL(text);
  const more = url.pathname !== "/" || url.search !== "" || url.hash !== "";
  return `${url.origin}/${more ? "***" : ""}`;
}
