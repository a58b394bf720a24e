/**
 * A reidentify: from `t` on, the profile known by key `from` is known by key `to`. Edges are
 * only ever added, and what they mean is a function of the set, so the order they are applied
 * in does not matter.
 */
export interface AliasEdge {
  from: string;
  to: string;
  t: number;
}

/** Each key's neighbours by the links stamped at or before `until`, in either direction. */
function neighboursOf(edges: readonly AliasEdge[], until: number): Map<string, string[]> {
  const neighbours = new Map<string, string[]>();
  const link = (a: string, b: string) => {
    const list = neighbours.get(a);
    if (list === undefined) neighbours.set(a, [b]);
    else list.push(b);
  };
  for (const { from, to, t } of edges) {
    if (t > until) continue;
    link(from, to);
    link(to, from);
  }
  return neighbours;
}

/** Every key reachable from `key`, `key` included, unsorted. */
function reachable(neighbours: ReadonlyMap<string, readonly string[]>, key: string): Set<string> {
  const group = new Set([key]);
  const pending = [key];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    for (const other of neighbours.get(next) ?? []) {
      if (group.has(other)) continue;
      group.add(other);
      pending.push(other);
    }
  }
  return group;
}

/**
 * The keys that name one profile: every key linked to `key` by reidentifies stamped at or
 * before `until`, in either direction (renaming onto an id that already names a profile merges
 * the two). Sorted; `key` alone when it was never reidentified.
 */
export function aliasGroup(edges: readonly AliasEdge[], key: string, until = Infinity): string[] {
  // A walk over each key's neighbours: linear in the links, whatever order they come in (passes
  // over the list until nothing grew took 1.3 s for a chain of 5,000 ids listed in reverse).
  return [...reachable(neighboursOf(edges, until), key)].sort();
}

/** One profile's keys (aliasGroup's) and the links between them. */
export interface AliasComponent {
  keys: string[];
  edges: AliasEdge[];
}

/**
 * The profile of each of `keys` at once (a page of a list): its keys and its links, the same
 * object for keys of one profile. One walk over the links in all, where aliasGroup for each key
 * walks them all again (a page of 100 keys over 25 profiles of 1,000 ids: 100 walks of 25,000).
 */
export function aliasComponents(edges: readonly AliasEdge[], keys: readonly string[]): Map<string, AliasComponent> {
  const neighbours = neighboursOf(edges, Infinity);
  const components = new Map<string, AliasComponent>();
  for (const key of keys) {
    if (components.has(key)) continue;
    const group = reachable(neighbours, key);
    const component: AliasComponent = { keys: [...group].sort(), edges: [] };
    for (const member of group) components.set(member, component);
  }
  for (const edge of edges) components.get(edge.from)?.edges.push(edge);
  return components;
}

/** Later first; between edges of one stamp, the larger target, so the choice never depends on order. */
const isLater = (a: AliasEdge, b: AliasEdge) => (a.t !== b.t ? a.t > b.t : a.to > b.to);

/** The key a profile is known by: the new id of the latest reidentify among its keys. */
export function canonicalKey(edges: readonly AliasEdge[], key: string): string {
  const group = new Set(aliasGroup(edges, key));
  let latest: AliasEdge | undefined;
  for (const edge of edges) {
    if (group.has(edge.from) && (latest === undefined || isLater(edge, latest))) latest = edge;
  }
  return latest?.to ?? key;
}

/**
 * The most ids reidentifies may link into one profile. Every read of the profile and every
 * erasure of it walks all of them, so this bounds what one request and one job can cost
 * (docs/profiles.md, "Limits"). The statement that records links refuses a reidentify past it
 * (libs/db/functions/record_link_operations.sql).
 */
export const MAX_LINKED_IDS = 1_000;
