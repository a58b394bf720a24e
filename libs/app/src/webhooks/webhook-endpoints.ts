import {
  changeFeedNow,
  insertWebhookEndpoint,
  projectExists,
  rotateWebhookSecret,
  type Sql,
  type WebhookEndpointSummary,
} from "@cm/db";
import {
  changeCursor,
  InvalidInput,
  newSigningSecret,
  sealSecret,
  webhookTypesProblems,
  webhookUrlProblems,
} from "@cm/domain";
import { NotFound } from "../errors";
import { checkWebhookHost, systemResolve, type Resolve } from "./webhook-hosts";

/** What endpoint management is given: the pool and WEBHOOK_SECRET_KEY's bytes, which secrets are sealed under. */
export interface WebhookSecretsDeps {
  sql: Sql;
  secretKey: Buffer;
}

/** What a new endpoint's host is checked with: WEBHOOK_ALLOW_PRIVATE_NETWORKS, and a resolver (the system's by default). */
export interface WebhookHostRules {
  allowPrivateNetworks: boolean;
  resolve?: Resolve;
}

/**
 * A new endpoint of the project, delivered the changes applied from now on (of `types`, or of
 * every type when null), and its signing secret: shown this once, stored only sealed.
 *
 * Its host is checked as the worker checks it before each delivery (checkWebhookHost), so that
 * an address the worker would refuse is refused here with its reason. A name that does not
 * resolve (yet, or not from here) is taken: the worker's check is the one that holds.
 */
export async function createWebhookEndpoint(
  deps: WebhookSecretsDeps & WebhookHostRules,
  projectId: number,
  input: { url: string; types: string[] | null },
): Promise<{ endpoint: WebhookEndpointSummary; secret: string }> {
  const urlProblems = webhookUrlProblems(input.url);
  if (urlProblems.length === 0) {
    const host = await checkWebhookHost(
      new URL(input.url).hostname,
      deps.allowPrivateNetworks,
      deps.resolve ?? systemResolve,
    );
    if ("refused" in host) urlProblems.push({ path: "url", message: `url refused: ${host.refused}` });
  }
  const problems = [...urlProblems, ...webhookTypesProblems(input.types)];
  if (problems.length > 0) throw new InvalidInput(problems);
  if (!(await projectExists(deps.sql, projectId))) throw new NotFound(`project ${projectId}`);
  const secret = newSigningSecret();
  const endpoint = await insertWebhookEndpoint(deps.sql, {
    projectId,
    url: input.url,
    types: input.types,
    secretSealed: sealSecret(deps.secretKey, secret),
    cursor: changeCursor(projectId, await changeFeedNow(deps.sql)),
  });
  return { endpoint, secret };
}

/**
 * A new signing secret for the endpoint, shown this once; the one it replaces keeps signing beside
 * it for `graceSeconds`, so that its receiver can switch without refusing a delivery.
 */
export async function rotateWebhookSigningSecret(
  deps: WebhookSecretsDeps,
  endpointId: string,
  graceSeconds: number,
): Promise<{ secret: string; previousSecretExpiresAt: Date }> {
  const secret = newSigningSecret();
  const rotated = await rotateWebhookSecret(deps.sql, endpointId, sealSecret(deps.secretKey, secret), graceSeconds);
  if (rotated === null) throw new NotFound(`webhook endpoint ${endpointId}`);
  return { secret, ...rotated };
}
