import type { tags } from "typia";
import { idPageRequest, type IdPageRequest } from "../kernel/id-pages";
import type { Problem } from "../kernel/problems";
import type { QueryValues } from "../kernel/query-values";
import { graphProblems } from "./journey-graph";

export const JOURNEY_STATUSES = ["draft", "active", "paused", "archived", "cancelled"] as const;
export type JourneyStatus = (typeof JOURNEY_STATUSES)[number];

export const MESSAGE_NODE_TYPES = ["email", "sms", "push"] as const;
export type MessageNodeType = (typeof MESSAGE_NODE_TYPES)[number];

/**
 * api.md leaves transitions open (docs/journeys.md): a journey that has run never returns to
 * draft, cancelled is final but for archiving, and an archived journey comes back as a draft.
 */
const TRANSITIONS: Record<JourneyStatus, readonly JourneyStatus[]> = {
  draft: ["active", "cancelled", "archived"],
  active: ["paused", "cancelled", "archived"],
  paused: ["active", "cancelled", "archived"],
  cancelled: ["archived"],
  archived: ["draft"],
};

export function isJourneyStatus(value: string): value is JourneyStatus {
  return (JOURNEY_STATUSES as readonly string[]).includes(value);
}

/** Statuses a journey may move to from `from`; staying put is always allowed (a no-op). */
export function allowedTransitions(from: JourneyStatus): readonly JourneyStatus[] {
  return TRANSITIONS[from];
}

export function canTransition(from: JourneyStatus, to: JourneyStatus): boolean {
  return from === to || TRANSITIONS[from].includes(to);
}

type LocalId = number & tags.Type<"int32">;
type Text = string & tags.MinLength<1> & tags.MaxLength<255>;

export interface JourneyFileTrigger {
  type: string & tags.Pattern<"^[a-z][a-z0-9_]{0,63}$">;
  event_name?: Text | null;
}

export interface JourneyFileContent {
  /** Ignored: ids are given on import. */
  id?: number;
  locale: (string & tags.MinLength<1> & tags.MaxLength<35>) | null;
  is_default: boolean;
  subject: string & tags.MaxLength<998>;
  preheader_text: string & tags.MaxLength<998>;
  /** Stored, never returned. */
  body?: { html?: string | null; text?: string | null };
}

export interface JourneyFileMessage {
  /** Ignored: ids are given on import. */
  id?: number;
  from?: Text | null;
  reply_to?: Text | null;
  contents: JourneyFileContent[] & tags.MaxItems<100>;
}

export interface JourneyFileEnterOrExit {
  id: LocalId;
  type: "enter" | "exit";
}

export interface JourneyFileDelay {
  id: LocalId;
  type: "delay";
  delay: {
    duration: number & tags.Minimum<0>;
    duration_unit: string & tags.MinLength<1> & tags.MaxLength<32>;
    delivery_option: number;
    /** Shapes not shown by api.md: any JSON value, returned as given (null when absent). */
    delay_property?: unknown;
    property_type?: unknown;
    preferred_delivery_time?: unknown;
  };
}

export interface JourneyFileBranch {
  id: LocalId;
  type: "branch";
  conditions: {
    combinator: string & tags.MinLength<1> & tags.MaxLength<32>;
    groups: unknown[];
  };
}

export interface JourneyFileEmail {
  id: LocalId;
  type: "email";
  title: Text;
  message: JourneyFileMessage;
}

export interface JourneyFileTextMessage {
  id: LocalId;
  type: "sms" | "push";
  title?: Text | null;
  message: JourneyFileMessage;
}

export type JourneyFileNode =
  JourneyFileEnterOrExit | JourneyFileDelay | JourneyFileBranch | JourneyFileEmail | JourneyFileTextMessage;

export interface JourneyFileEdge {
  from: LocalId;
  to: LocalId;
  branch_index?: (number & tags.Type<"uint32">) | null;
}

/**
 * decisions.md "journey import": one journey in the shape `GET /journeys/{id}` returns, plus
 * content bodies and the audience. Node ids are local to the file; other ids and the
 * timestamps are ignored.
 */
export interface JourneyFile {
  name: Text;
  description?: (string & tags.MaxLength<2000>) | null;
  status?: JourneyStatus;
  trigger: JourneyFileTrigger;
  nodes: JourneyFileNode[] & tags.MaxItems<1000>;
  edges: JourneyFileEdge[] & tags.MaxItems<5000>;
  /** Stored, never returned. */
  audience?: unknown;
}

export function isMessageNode(node: JourneyFileNode): node is JourneyFileEmail | JourneyFileTextMessage {
  return (MESSAGE_NODE_TYPES as readonly string[]).includes(node.type);
}

/** What typia cannot check in a journey file: the graph rules and fields that depend on a type. */
export function journeyFileProblems(file: JourneyFile): Problem[] {
  const problems = graphProblems(file);
  const eventName = file.trigger.event_name ?? null;
  const path = "trigger.event_name";
  if (file.trigger.type === "event" && eventName === null)
    problems.push({ path, message: `${path} is required when trigger.type is "event"` });
  if (file.trigger.type !== "event" && eventName !== null)
    problems.push({ path, message: `${path} must be null unless trigger.type is "event"` });
  file.nodes.forEach((node, index) => {
    if (!isMessageNode(node) || node.type === "email") return;
    for (const field of ["from", "reply_to"] as const) {
      if ((node.message[field] ?? null) !== null) {
        const message = `node ${node.id} (${node.type}): message.${field} is email-only and must be null`;
        problems.push({ path: `nodes[${index}].message.${field}`, message });
      }
    }
  });
  return problems;
}

/** A page of the journey list, of one status or all. */
export interface JourneyListRequest {
  page: IdPageRequest;
  status: JourneyStatus | null;
}

/** Reads `limit`, `cursor` and `status` from a query string. */
export function journeyListRequest(
  query: QueryValues,
): { ok: true; request: JourneyListRequest } | { ok: false; problems: Problem[] } {
  const paged = idPageRequest("journey", query);
  const problems = paged.ok ? [] : [...paged.problems];
  const status = query.status;
  if (status !== undefined && (typeof status !== "string" || !isJourneyStatus(status))) {
    problems.push({ path: "query.status", message: `status must be one of ${JOURNEY_STATUSES.join(", ")}` });
  }
  if (!paged.ok || problems.length > 0) return { ok: false, problems };
  return { ok: true, request: { page: paged.page, status: (status as JourneyStatus | undefined) ?? null } };
}
