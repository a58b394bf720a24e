import type { Problem } from "../kernel/problems";

/** What the graph rules look at: node ids and types, and the edges between them. */
export interface GraphNode {
  id: number;
  type: string;
}

export interface GraphEdge {
  from: number;
  to: number;
  branch_index?: number | null;
}

export interface JourneyGraph {
  nodes: readonly GraphNode[];
  edges: readonly GraphEdge[];
}

/**
 * decisions.md "Journeys and messages": the rules a journey graph must follow. Returns one
 * problem per broken rule, its message naming the rule and the node (by the ids of the graph
 * given), or none when the graph is sound. A rule is about the graph as a whole, so the path is "".
 */
export function graphProblems(graph: JourneyGraph): Problem[] {
  const problems: Problem[] = [];
  const broken = (rule: string, message: string) => problems.push({ path: "", message: `rule "${rule}": ${message}` });
  const byId = new Map<number, GraphNode>();
  for (const node of graph.nodes) {
    if (byId.has(node.id)) broken("unique-ids", `node ${node.id} appears more than once`);
    else byId.set(node.id, node);
  }
  const label = (id: number) => `node ${id} (${byId.get(id)?.type ?? "unknown"})`;

  // Only edges between nodes of this graph take part in the other rules.
  const edges = graph.edges.filter((edge) => {
    for (const end of [edge.from, edge.to]) {
      if (!byId.has(end)) {
        broken(
          "same-journey",
          `edge ${edge.from} -> ${edge.to} names node ${end}, which is not a node of this journey`,
        );
        return false;
      }
    }
    return true;
  });

  const enters = graph.nodes.filter((node) => node.type === "enter");
  if (enters.length === 0) broken("one-enter", "the journey has no enter node");
  for (const extra of enters.slice(1)) broken("one-enter", `${label(extra.id)} is a second enter node`);
  for (const edge of edges) {
    if (byId.get(edge.to)?.type === "enter")
      broken("enter-no-incoming", `${label(edge.to)} has an incoming edge from ${label(edge.from)}`);
  }
  if (!graph.nodes.some((node) => node.type === "exit")) broken("has-exit", "the journey has no exit node");

  const successors = new Map<number, number[]>([...byId.keys()].map((id) => [id, []]));
  for (const edge of edges) successors.get(edge.from)?.push(edge.to);

  const enter = enters[0];
  if (enter !== undefined) {
    const reached = reachableFrom(enter.id, successors);
    for (const id of byId.keys()) {
      if (!reached.has(id)) broken("reachable", `${label(id)} cannot be reached from the enter node`);
    }
  }

  for (const cycle of cycles(successors)) {
    broken("acyclic", `${label(cycle[0] as number)} is on a cycle (${cycle.join(" -> ")})`);
  }

  const branchIndexes = new Map<number, Set<number>>();
  for (const edge of edges) {
    const fromBranch = byId.get(edge.from)?.type === "branch";
    const index = edge.branch_index ?? null;
    const name = `edge ${edge.from} -> ${edge.to}`;
    if (fromBranch && index === null)
      broken("branch-index", `${name} leaves ${label(edge.from)} without a branch_index`);
    if (!fromBranch && index !== null)
      broken("branch-index", `${name} has a branch_index but ${label(edge.from)} is not a branch`);
    if (fromBranch && index !== null) {
      const seen = branchIndexes.get(edge.from) ?? new Set<number>();
      if (seen.has(index)) broken("branch-index", `${label(edge.from)} has two edges with branch_index ${index}`);
      branchIndexes.set(edge.from, seen.add(index));
    }
  }
  return problems;
}

function reachableFrom(start: number, successors: Map<number, number[]>): Set<number> {
  const reached = new Set([start]);
  const pending = [start];
  for (let id = pending.pop(); id !== undefined; id = pending.pop()) {
    for (const next of successors.get(id) ?? []) {
      if (!reached.has(next)) {
        reached.add(next);
        pending.push(next);
      }
    }
  }
  return reached;
}

/** One cycle per back edge found by a depth-first search, as node ids from the cycle's entry back to it. */
function cycles(successors: Map<number, number[]>): number[][] {
  const found: number[][] = [];
  const done = new Set<number>();
  const path: number[] = [];
  const visit = (id: number) => {
    path.push(id);
    for (const next of successors.get(id) ?? []) {
      const onPath = path.indexOf(next);
      if (onPath >= 0) found.push([...path.slice(onPath), next]);
      else if (!done.has(next)) visit(next);
    }
    path.pop();
    done.add(id);
  };
  for (const id of successors.keys()) if (!done.has(id)) visit(id);
  return found;
}
