import { insertJourney, type Sql } from "@cm/db";
import type { JourneyFile, JourneyFileContent, JourneyFileNode } from "@cm/domain";

/** Text planted in every stored body and audience, so that a test can prove it never comes back. */
export const SECRET = "SECRET-BODY-7f3a";

function content(locale: string | null, isDefault: boolean, n: number): JourneyFileContent {
  return {
    locale,
    is_default: isDefault,
    subject: `Subject ${locale ?? "any"} ${n}`,
    preheader_text: `Preheader ${locale ?? "any"} ${n}`,
    body: { html: `<p>${SECRET} html ${n}</p>`, text: `${SECRET} text ${n}` },
  };
}

/**
 * Every node type, local ids out of order, contents listed in no particular order:
 * enter 10 → delay 20 → email 30 → branch 40 → (0) sms 50 → exit 70, (1) push 60 → exit 70.
 */
export function sampleJourney(overrides: Partial<JourneyFile> = {}): JourneyFile {
  return {
    name: "Sample journey",
    description: "Every node type",
    status: "active",
    trigger: { type: "event", event_name: "signed_up" },
    audience: { segments: [SECRET], filters: [{ plan: SECRET }], entry_rules: { text: SECRET } },
    nodes: [
      { id: 10, type: "enter" },
      {
        id: 20,
        type: "delay",
        delay: {
          duration: 1.5,
          duration_unit: "days",
          delivery_option: 2,
          delay_property: "trial_ends_at",
          property_type: "date",
          preferred_delivery_time: "09:30",
        },
      },
      {
        id: 30,
        type: "email",
        title: "Welcome",
        message: {
          from: "hello@example.com",
          reply_to: "support@example.com",
          contents: [
            content("fr", false, 1),
            content(null, false, 2),
            content("en-GB", false, 3),
            content("de", true, 4),
            content("en", false, 5),
          ],
        },
      },
      {
        id: 40,
        type: "branch",
        conditions: {
          combinator: "or",
          groups: [{ combinator: "and", rules: [{ property: "plan", operator: "eq", value: "pro" }] }],
        },
      },
      {
        id: 50,
        type: "sms",
        title: "Reminder",
        message: { from: null, reply_to: null, contents: [content("en", true, 6)] },
      },
      {
        id: 60,
        type: "push",
        title: "Nudge",
        message: { from: null, reply_to: null, contents: [content("es", false, 7), content("en", true, 8)] },
      },
      { id: 70, type: "exit" },
    ],
    edges: [
      { from: 10, to: 20 },
      { from: 20, to: 30 },
      { from: 30, to: 40 },
      { from: 40, to: 60, branch_index: 1 },
      { from: 40, to: 50, branch_index: 0 },
      { from: 50, to: 70 },
      { from: 60, to: 70 },
    ],
    ...overrides,
  };
}

const CHAIN_TYPES = ["email", "delay", "sms", "push"] as const;

/** enter → size-2 nodes in a line (emails with three contents, delays, SMS, push) → exit. */
export function chainJourney(size: number): JourneyFile {
  const nodes: JourneyFileNode[] = [{ id: 1, type: "enter" }];
  for (let id = 2; id < size; id += 1) {
    const type = CHAIN_TYPES[(id - 2) % CHAIN_TYPES.length] as (typeof CHAIN_TYPES)[number];
    if (type === "delay") nodes.push({ id, type, delay: { duration: id, duration_unit: "hours", delivery_option: 0 } });
    else if (type === "email") {
      const contents = [content("en", true, id), content("fr", false, id), content("de", false, id)];
      nodes.push({ id, type, title: `Email ${id}`, message: { from: "news@example.com", reply_to: null, contents } });
    } else
      nodes.push({
        id,
        type,
        title: `${type} ${id}`,
        message: { from: null, reply_to: null, contents: [content("en", true, id)] },
      });
  }
  nodes.push({ id: size, type: "exit" });
  const edges = nodes.slice(1).map((node) => ({ from: node.id - 1, to: node.id }));
  return { name: `Chain of ${size}`, status: "active", trigger: { type: "event", event_name: "chain" }, nodes, edges };
}

export async function storeJourney(sql: Sql, projectId: number, file: JourneyFile): Promise<number> {
  return sql.begin((tx) => insertJourney(tx, projectId, file));
}
