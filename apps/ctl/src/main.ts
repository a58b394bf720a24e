import { parseArgs } from "node:util";
import { loadConfig } from "@cm/config";
import { connect } from "@cm/db";
import { CliError, integerOption, requireOption } from "./cli-error";
import { demoCommand } from "./commands/demo";
import { deleteEventsCommand } from "./commands/events";
import { importJourneyCommand, journeyStatusCommand } from "./commands/journey";
import { createKeyCommand, parsePermissions } from "./commands/key";
import { migrateCommand } from "./commands/migrate";
import { createProjectCommand } from "./commands/project";
import { discardCommand, heldFilter, replayCommand } from "./commands/replay";
import { createTopicCommand } from "./commands/topic";

const USAGE = `usage: ctl <command>
  migrate
  project create --name NAME
  key create --project ID --permissions p1,p2
  topic create --project ID --name NAME [--description TEXT] [--default-status subscribed|unsubscribed]
  journey import --project ID FILE
  journey status --id ID --status draft|active|paused|archived|cancelled
  events delete --project ID --user USER_ID [--from TIME] [--to TIME]
  replay [--project ID] [--queue identify|events] [--from TIME] [--to TIME] [--error-kind KIND]
  discard [--project ID] [--queue identify|events] [--from TIME] [--to TIME] [--error-kind KIND]
  demo`;

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
} as const;

async function run(argv: string[]): Promise<unknown> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new CliError(`${(error as Error).message}\n${USAGE}`, 2);
  }
  const { values, positionals } = parsed;
  // `journey import` is the one command followed by an argument (its FILE).
  const command = positionals.slice(0, 2).join(" ") === "journey import" ? "journey import" : positionals.join(" ");
  const config = loadConfig();
  const sql = connect(config.databaseUrl, { max: 1, applicationName: "cm-ctl" });
  const redis = { url: config.redisUrl, prefix: config.queuePrefix };
  try {
    switch (command) {
      case "migrate":
        return await migrateCommand(sql);
      case "project create":
        return await createProjectCommand(sql, requireOption(values, "name"));
      case "key create":
        if (values.permissions === undefined) throw new CliError("--permissions is required", 2);
        return await createKeyCommand(sql, integerOption(values, "project"), parsePermissions(values.permissions));
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
      case "events delete":
        return await deleteEventsCommand(sql, integerOption(values, "project"), requireOption(values, "user"), {
          ...(values.from === undefined ? {} : { from: values.from }),
          ...(values.to === undefined ? {} : { to: values.to }),
        });
      case "replay":
        return await replayCommand(sql, redis, heldFilter(values));
      case "discard":
        return await discardCommand(sql, redis, heldFilter(values));
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
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  },
  (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`error: ${message}\n`);
    process.exitCode = error instanceof CliError ? error.exitCode : 1;
  },
);
