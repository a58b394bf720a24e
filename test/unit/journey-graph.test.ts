import {
  canTransition,
  graphProblems,
  journeyFileProblems,
  type GraphEdge,
  type GraphNode,
  type JourneyFile,
  type JourneyGraph,
} from "@cm/domain";
import { describe, expect, it } from "vitest";

const graphMessages = (graph: JourneyGraph) => graphProblems(graph).map((problem) => problem.message);
const node = (id: number, type: string): GraphNode => ({ id, type });
const edge = (from: number, to: number, branch_index?: number): GraphEdge =>
  branch_index === undefined ? { from, to } : { from, to, branch_index };

/** enter 1 → email 2 → branch 3 → (0) delay 4 → exit 6, (1) sms 5 → exit 6 */
const SOUND = {
  nodes: [node(1, "enter"), node(2, "email"), node(3, "branch"), node(4, "delay"), node(5, "sms"), node(6, "exit")],
  edges: [edge(1, 2), edge(2, 3), edge(3, 4, 0), edge(3, 5, 1), edge(4, 6), edge(5, 6)],
};

describe("graphProblems", () => {
  it("accepts a sound graph", () => {
    expect(graphMessages(SOUND)).toEqual([]);
  });

  it("accepts several exits and edges in any order", () => {
    const nodes = [node(9, "exit"), node(1, "enter"), node(2, "push"), node(8, "exit")];
    expect(graphMessages({ nodes, edges: [edge(2, 9), edge(1, 2), edge(1, 8)] })).toEqual([]);
  });

  it('refuses a graph without an enter node (rule "one-enter")', () => {
    expect(graphMessages({ nodes: [node(1, "email"), node(2, "exit")], edges: [edge(1, 2)] })).toContain(
      'rule "one-enter": the journey has no enter node',
    );
  });

  it('refuses a second enter node and names it (rule "one-enter")', () => {
    const problems = graphMessages({
      nodes: [...SOUND.nodes, node(7, "enter")],
      edges: [...SOUND.edges, edge(7, 6)],
    });
    expect(problems).toContain('rule "one-enter": node 7 (enter) is a second enter node');
  });

  it('refuses an edge into the enter node (rule "enter-no-incoming")', () => {
    const problems = graphMessages({ nodes: SOUND.nodes, edges: [...SOUND.edges, edge(4, 1)] });
    expect(problems).toContain('rule "enter-no-incoming": node 1 (enter) has an incoming edge from node 4 (delay)');
  });

  it('refuses a graph without an exit node (rule "has-exit")', () => {
    const problems = graphMessages({ nodes: [node(1, "enter"), node(2, "email")], edges: [edge(1, 2)] });
    expect(problems).toEqual(['rule "has-exit": the journey has no exit node']);
  });

  it('refuses a node the enter node cannot reach (rule "reachable")', () => {
    const problems = graphMessages({ nodes: [...SOUND.nodes, node(7, "email")], edges: [...SOUND.edges, edge(7, 6)] });
    expect(problems).toEqual(['rule "reachable": node 7 (email) cannot be reached from the enter node']);
  });

  it('refuses a cycle and names a node on it (rule "acyclic")', () => {
    const problems = graphMessages({ nodes: SOUND.nodes, edges: [...SOUND.edges, edge(4, 2)] });
    expect(problems).toEqual(['rule "acyclic": node 2 (email) is on a cycle (2 -> 3 -> 4 -> 2)']);
  });

  it('refuses a self-loop (rule "acyclic")', () => {
    const problems = graphMessages({ nodes: SOUND.nodes, edges: [...SOUND.edges, edge(5, 5)] });
    expect(problems).toEqual(['rule "acyclic": node 5 (sms) is on a cycle (5 -> 5)']);
  });

  it('finds a cycle among nodes the enter node cannot reach (rules "reachable" and "acyclic")', () => {
    const problems = graphMessages({
      nodes: [...SOUND.nodes, node(7, "delay"), node(8, "email")],
      edges: [...SOUND.edges, edge(7, 8), edge(8, 7)],
    });
    expect(problems).toContain('rule "reachable": node 7 (delay) cannot be reached from the enter node');
    expect(problems).toContain('rule "acyclic": node 7 (delay) is on a cycle (7 -> 8 -> 7)');
  });

  it('refuses an edge to a node that is not in the journey (rule "same-journey")', () => {
    const problems = graphMessages({ nodes: SOUND.nodes, edges: [...SOUND.edges, edge(4, 99)] });
    expect(problems).toEqual(['rule "same-journey": edge 4 -> 99 names node 99, which is not a node of this journey']);
  });

  it('refuses an edge from a node that is not in the journey (rule "same-journey")', () => {
    const problems = graphMessages({ nodes: SOUND.nodes, edges: [...SOUND.edges, edge(42, 6)] });
    expect(problems).toEqual(['rule "same-journey": edge 42 -> 6 names node 42, which is not a node of this journey']);
  });

  it('refuses an edge leaving a branch without branch_index (rule "branch-index")', () => {
    const edges = SOUND.edges.map((e) => (e.from === 3 && e.to === 5 ? edge(3, 5) : e));
    expect(graphMessages({ nodes: SOUND.nodes, edges })).toEqual([
      'rule "branch-index": edge 3 -> 5 leaves node 3 (branch) without a branch_index',
    ]);
  });

  it('treats a null branch_index as absent (rule "branch-index")', () => {
    const edges = SOUND.edges.map((e) => (e.from === 3 && e.to === 5 ? { from: 3, to: 5, branch_index: null } : e));
    expect(graphMessages({ nodes: SOUND.nodes, edges })).toHaveLength(1);
  });

  it('refuses a branch_index on an edge that does not leave a branch (rule "branch-index")', () => {
    const edges = SOUND.edges.map((e) => (e.from === 1 ? edge(1, 2, 0) : e));
    expect(graphMessages({ nodes: SOUND.nodes, edges })).toEqual([
      'rule "branch-index": edge 1 -> 2 has a branch_index but node 1 (enter) is not a branch',
    ]);
  });

  it('refuses two edges of one branch with the same branch_index (rule "branch-index")', () => {
    const edges = SOUND.edges.map((e) => (e.from === 3 && e.to === 5 ? edge(3, 5, 0) : e));
    expect(graphMessages({ nodes: SOUND.nodes, edges })).toEqual([
      'rule "branch-index": node 3 (branch) has two edges with branch_index 0',
    ]);
  });

  it('refuses two nodes with the same id (rule "unique-ids")', () => {
    const problems = graphMessages({ nodes: [...SOUND.nodes, node(4, "email")], edges: SOUND.edges });
    expect(problems).toEqual(['rule "unique-ids": node 4 appears more than once']);
  });

  it("reports every broken rule at once", () => {
    const problems = graphMessages({ nodes: [node(1, "email"), node(2, "email")], edges: [edge(1, 2, 3)] });
    expect(problems).toEqual([
      'rule "one-enter": the journey has no enter node',
      'rule "has-exit": the journey has no exit node',
      'rule "branch-index": edge 1 -> 2 has a branch_index but node 1 (email) is not a branch',
    ]);
  });
});

describe("journeyFileProblems", () => {
  const file = (overrides: Partial<JourneyFile>): JourneyFile => ({
    name: "J",
    trigger: { type: "event", event_name: "signed_up" },
    nodes: [
      { id: 1, type: "enter" },
      { id: 2, type: "sms", message: { from: null, reply_to: null, contents: [] } },
      { id: 3, type: "exit" },
    ],
    edges: [
      { from: 1, to: 2 },
      { from: 2, to: 3 },
    ],
    ...overrides,
  });

  it("accepts a sound file", () => {
    expect(journeyFileProblems(file({}))).toEqual([]);
  });

  it("includes the graph rules", () => {
    expect(journeyFileProblems(file({ edges: [{ from: 1, to: 2 }] }))).toEqual([
      { path: "", message: 'rule "reachable": node 3 (exit) cannot be reached from the enter node' },
    ]);
  });

  it("wants an event_name on exactly the event triggers", () => {
    expect(journeyFileProblems(file({ trigger: { type: "event" } }))).toEqual([
      { path: "trigger.event_name", message: 'trigger.event_name is required when trigger.type is "event"' },
    ]);
    expect(journeyFileProblems(file({ trigger: { type: "segment", event_name: "x" } }))).toEqual([
      { path: "trigger.event_name", message: 'trigger.event_name must be null unless trigger.type is "event"' },
    ]);
    expect(journeyFileProblems(file({ trigger: { type: "segment", event_name: null } }))).toEqual([]);
  });

  it("refuses a sender on an SMS or push message", () => {
    const nodes = file({}).nodes.map((n) =>
      n.type === "sms" ? { ...n, message: { from: "+15550100", reply_to: null, contents: [] } } : n,
    );
    expect(journeyFileProblems(file({ nodes }))).toEqual([
      { path: "nodes[1].message.from", message: "node 2 (sms): message.from is email-only and must be null" },
    ]);
  });
});

describe("journey status transitions", () => {
  it.each([
    ["draft", "active", true],
    ["active", "paused", true],
    ["paused", "active", true],
    ["active", "archived", true],
    ["cancelled", "archived", true],
    ["archived", "draft", true],
    ["archived", "archived", true],
    ["active", "draft", false],
    ["cancelled", "active", false],
    ["archived", "active", false],
  ] as const)("%s -> %s allowed: %s", (from, to, allowed) => {
    expect(canTransition(from, to)).toBe(allowed);
  });
});
