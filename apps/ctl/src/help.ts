import { CHANGE_TYPES, JOURNEY_STATUSES, PERMISSIONS, TOPIC_STATUSES } from "@cm/domain";
import { IMPORT_HELP } from "./commands/import";

/** One command's help: its usage line, and what each of its options means and takes. */
interface CommandHelp {
  usage: string;
  options: [flag: string, meaning: string][];
}

const PROJECT: [string, string] = ["--project ID", "the project's id (ctl project create prints it)"];
const GRACE: [string, string] = [
  "--grace SECONDS",
  "how long the old one keeps working, in whole seconds (default 86400; 0 stops it at once)",
];
const TIME_RANGE: [string, string][] = [
  ["--from TIME", "failed at or after TIME: ISO 8601 with a time zone, or Unix seconds"],
  ["--to TIME", "failed before TIME"],
];
const HELD_FILTER: [string, string][] = [
  ["--project ID", "only this project's operations"],
  ["--queue identify|events", "only the profile operations' (identify) or the events' dead letters"],
  ...TIME_RANGE,
  ["--error-kind KIND", "only those whose failure names KIND (the kind a dead letter lists)"],
];
const credentialCommands = (noun: "key" | "token", what: string): Record<string, CommandHelp> => ({
  [`${noun} list`]: { usage: `${noun} list --project ID`, options: [PROJECT] },
  [`${noun} revoke`]: {
    usage: `${noun} revoke --id ID`,
    options: [["--id ID", `the ${what}'s id (${noun} list shows it)`]],
  },
  [`${noun} rotate`]: {
    usage: `${noun} rotate --id ID [--grace SECONDS]`,
    options: [["--id ID", `the ${what}'s id`], GRACE],
  },
});

/** Every command, in the order the usage lists them. */
const COMMANDS: Record<string, CommandHelp> = {
  migrate: { usage: "migrate", options: [] },
  "project create": { usage: "project create --name NAME", options: [["--name NAME", "the project's name"]] },
  "key create": {
    usage: "key create --project ID --permissions p1,p2",
    options: [PROJECT, ["--permissions p1,p2", `any of ${PERMISSIONS.join(", ")}`]],
  },
  ...credentialCommands("key", "API key"),
  "token create": { usage: "token create --project ID", options: [PROJECT] },
  ...credentialCommands("token", "identify token"),
  "topic create": {
    usage: "topic create --project ID --name NAME [--description TEXT] [--default-status STATUS]",
    options: [
      PROJECT,
      ["--name NAME", "the topic's name"],
      ["--description TEXT", "shown to people in the preference center"],
      ["--default-status STATUS", `${TOPIC_STATUSES.join(" or ")} (default subscribed)`],
    ],
  },
  "journey import": {
    usage: "journey import --project ID FILE",
    options: [PROJECT, ["FILE", "a journey as JSON (apps/ctl/fixtures/journeys has examples)"]],
  },
  "journey status": {
    usage: "journey status --id ID --status STATUS",
    options: [
      ["--id ID", "the journey's id"],
      ["--status STATUS", `one of ${JOURNEY_STATUSES.join(", ")}, where the journey's status allows it`],
    ],
  },
  "webhook create": {
    usage: "webhook create --project ID --url URL [--types T1,T2]   (prints its signing secret, this once)",
    options: [
      PROJECT,
      [
        "--url URL",
        "where the changes are posted: an http or https URL of a public address, or of a private network with WEBHOOK_ALLOW_PRIVATE_NETWORKS=true (docs/webhooks.md)",
      ],
      ["--types T1,T2", `only these change types (default every one): ${CHANGE_TYPES.join(", ")}`],
    ],
  },
  "webhook list": { usage: "webhook list --project ID", options: [PROJECT] },
  "webhook revoke": { usage: "webhook revoke --id ID", options: [["--id ID", "the endpoint's id"]] },
  "webhook rotate-secret": {
    usage: "webhook rotate-secret --id ID [--grace SECONDS]",
    options: [["--id ID", "the endpoint's id"], GRACE],
  },
  "webhook replay": {
    usage: "webhook replay --id ID   (a parked endpoint, from the batch it failed)",
    options: [["--id ID", "the endpoint's id"]],
  },
  "events delete": {
    usage: "events delete --project ID --user USER_ID [--from TIME] [--to TIME]",
    options: [
      PROJECT,
      ["--user USER_ID", "the user whose events go"],
      ["--from TIME", "events at or after TIME: ISO 8601 with a time zone, or Unix seconds"],
      ["--to TIME", "events before TIME"],
    ],
  },
  export: {
    usage: "export --project ID [--events] [--output FILE]   (NDJSON on stdout, or in FILE; its summary on stderr)",
    options: [PROJECT, ["--events", "the events too, after the profiles"], ["--output FILE", "write to FILE"]],
  },
  import: {
    usage: "import --project ID [FILE|-] [--format F] [--state FILE] [--rejects FILE] [--restart] [column flags]",
    options: [],
  },
  replay: {
    usage: "replay [--project ID] [--queue identify|events] [--from TIME] [--to TIME] [--error-kind KIND]",
    options: HELD_FILTER,
  },
  discard: {
    usage: "discard [--project ID] [--queue identify|events] [--from TIME] [--to TIME] [--error-kind KIND]",
    options: HELD_FILTER,
  },
  demo: { usage: "demo", options: [] },
};

/** Every command's usage line, as `ctl`, `ctl --help` and a mistyped command print them. */
export const USAGE = `usage: ctl <command>   (ctl <command> --help: what its options take)
${Object.values(COMMANDS)
  .map(({ usage }) => `  ${usage}`)
  .join("\n")}`;

/**
 * What `ctl <words> --help` prints: that command's usage and options, the usage lines of a group
 * (`ctl key --help`), or every usage line.
 */
export function helpOf(words: string[]): string {
  const named = words.join(" ");
  const name = Object.keys(COMMANDS).find((command) => named === command || named.startsWith(`${command} `));
  if (name === "import") return IMPORT_HELP;
  const help = name === undefined ? undefined : COMMANDS[name];
  if (help === undefined) {
    const group = Object.keys(COMMANDS).filter((command) => named !== "" && command.startsWith(`${named} `));
    return group.length === 0
      ? USAGE
      : ["usage: ctl", ...group.map((command) => `  ${COMMANDS[command]?.usage}`)].join("\n");
  }
  const width = Math.max(0, ...help.options.map(([flag]) => flag.length)) + 2;
  const options = help.options.map(([flag, meaning]) => `  ${flag.padEnd(width)}${meaning}`);
  return [`usage: ctl ${help.usage}`, ...options].join("\n");
}
