import { parseArgs } from "node:util";
import { loadConfig } from "@cm/config";
import { connect } from "@cm/db";
import { CliError, integerOption, requireOption } from "./cli-error";
import { demoCommand } from "./commands/demo";
import { deleteEventsCommand } from "./commands/events";
import { exportCommand } from "./commands/export";
import { importCommand, importOptions } from "./commands/import";
import { importJourneyCommand, journeyStatusCommand } from "./commands/journey";
import {
  createKeyCommand,
  createTokenCommand,
  DEFAULT_GRACE_SECONDS,
  listCredentialsCommand,
  parsePermissions,
  revokeCredentialCommand,
  rotateCredentialCommand,
} from "./commands/key";
import { migrateCommand } from "./commands/migrate";
import { createProjectCommand } from "./commands/project";
import { discardCommand, heldFilter, replayCommand } from "./commands/replay";
import { createTopicCommand } from "./commands/topic";
import {
  createWebhookCommand,
  listWebhooksCommand,
  parseWebhookTypes,
  replayWebhookCommand,
  revokeWebhookCommand,
  rotateWebhookSecretCommand,
} from "./commands/webhook";
import { helpOf, USAGE } from "./help";

const OPTIONS = {
  name: { type: "string" },
  project: { type: "string" },
  permissions: { type: "string" },
  description: { type: "string" },
  "default-status": { type: "string" },
  id: { type: "string" },
  status: { type: "string" },
  user: { type: "string" },
  from: { type: "string" },
  to: { type: "string" },
  queue: { type: "string" },
  "error-kind": { type: "string" },
  grace: { type: "string" },
  url: { type: "string" },
  types: { type: "string" },
  events: { type: "boolean" },
  output: { type: "string" },
  format: { type: "string" },
  state: { type: "string" },
  rejects: { type: "string" },
  restart: { type: "boolean" },
  "id-column": { type: "string" },
  "email-column": { type: "string" },
  "phone-column": { type: "string" },
  "stamp-column": { type: "string" },
  "event-name-column": { type: "string" },
  "event-id-column": { type: "string" },
  "data-columns": { type: "string" },
  "ignore-columns": { type: "string" },
  "tags-column": { type: "string" },
  "unsubscribed-column": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/** What `--help` prints: text for a person, where every other command prints JSON. */
class HelpText {
  constructor(readonly text: string) {}
}

/** The summary of a command whose stdout is its data (an export): it goes to stderr. */
class Summary {
  constructor(readonly summary: unknown) {}
}

/** A `--grace` in whole seconds (0 stops the old credential at once). */
function graceOption(values: { grace?: string | undefined }): number {
  if (values.grace === undefined) return DEFAULT_GRACE_SECONDS;
  if (!/^(0|[1-9][0-9]{0,8})$/.test(values.grace)) throw new CliError("--grace must be whole seconds", 2);
  return Number(values.grace);
}

/** The row an `--id` names: a credential's (its token's middle part shows it), a webhook endpoint's. */
function idOption(values: { id?: string | undefined }): string {
  return String(integerOption(values, "id"));
}

async function run(argv: string[]): Promise<unknown> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new CliError(`${(error as Error).message}\n${USAGE}`, 2);
  }
  const { values, positionals } = parsed;
  if (values.help === true || positionals[0] === "help") {
    return new HelpText(helpOf(positionals[0] === "help" ? positionals.slice(1) : positionals));
  }
  // `journey import` and `import` are the commands followed by an argument (their FILE).
  const command =
    positionals.slice(0, 2).join(" ") === "journey import"
      ? "journey import"
      : positionals[0] === "import"
        ? "import"
        : positionals.join(" ");
  const config = loadConfig();
  const sql = connect(config.databaseUrl, { max: 1, applicationName: "cm-ctl" });
  const queuesAt = { redis: config, prefix: config.queuePrefix, shards: config.intakeQueueShards };
  try {
    switch (command) {
      case "migrate":
        return await migrateCommand(sql);
      case "project create":
        return await createProjectCommand(sql, requireOption(values, "name"));
      case "key create":
        if (values.permissions === undefined) throw new CliError("--permissions is required", 2);
        return await createKeyCommand(sql, integerOption(values, "project"), parsePermissions(values.permissions));
      case "key list":
        return await listCredentialsCommand(sql, integerOption(values, "project"), "api_key");
      case "key revoke":
        return await revokeCredentialCommand(sql, idOption(values), "api_key");
      case "key rotate":
        return await rotateCredentialCommand(sql, idOption(values), "api_key", graceOption(values));
      case "token create":
        return await createTokenCommand(sql, integerOption(values, "project"));
      case "token list":
        return await listCredentialsCommand(sql, integerOption(values, "project"), "auth_token");
      case "token revoke":
        return await revokeCredentialCommand(sql, idOption(values), "auth_token");
      case "token rotate":
        return await rotateCredentialCommand(sql, idOption(values), "auth_token", graceOption(values));
      case "topic create":
        return await createTopicCommand(sql, {
          projectId: integerOption(values, "project"),
          name: requireOption(values, "name"),
          description: values.description ?? null,
          defaultStatus: values["default-status"] ?? "subscribed",
        });
      case "journey import":
        return await importJourneyCommand(sql, integerOption(values, "project"), positionals.slice(2));
      case "journey status":
        return await journeyStatusCommand(sql, integerOption(values, "id"), requireOption(values, "status"));
      case "webhook create":
        return await createWebhookCommand(sql, config.webhooks, {
          projectId: integerOption(values, "project"),
          url: requireOption(values, "url"),
          types: parseWebhookTypes(values.types),
        });
      case "webhook list":
        return await listWebhooksCommand(sql, integerOption(values, "project"));
      case "webhook revoke":
        return await revokeWebhookCommand(sql, idOption(values));
      case "webhook rotate-secret":
        return await rotateWebhookSecretCommand(sql, config.webhooks.secretKey, idOption(values), graceOption(values));
      case "webhook replay":
        return await replayWebhookCommand(sql, idOption(values));
      case "events delete":
        return await deleteEventsCommand(sql, integerOption(values, "project"), requireOption(values, "user"), {
          ...(values.from === undefined ? {} : { from: values.from }),
          ...(values.to === undefined ? {} : { to: values.to }),
        });
      case "replay":
        return await replayCommand(sql, queuesAt, heldFilter(values));
      case "discard":
        return await discardCommand(sql, queuesAt, heldFilter(values));
      case "export":
        return new Summary(
          await exportCommand(sql, integerOption(values, "project"), {
            events: values.events === true,
            output: values.output ?? null,
          }),
        );
      case "import":
        return new Summary(
          await importCommand(
            sql,
            queuesAt,
            importOptions(integerOption(values, "project"), positionals.slice(1), values),
            config.intakeLog,
          ),
        );
      case "demo":
        return await demoCommand(sql);
      default:
        throw new CliError(command === "" ? USAGE : `unknown command "${command}"\n${USAGE}`, 2);
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
}

run(process.argv.slice(2)).then(
  (result) => {
    if (result instanceof Summary) process.stderr.write(`${JSON.stringify(result.summary)}\n`);
    else process.stdout.write(result instanceof HelpText ? `${result.text}\n` : `${JSON.stringify(result, null, 2)}\n`);
  },
  (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`error: ${message}\n`);
    process.exitCode = error instanceof CliError ? error.exitCode : 1;
  },
);
