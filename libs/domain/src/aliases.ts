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

/**
 * The keys that name one profile: every key linked to `key` by reidentifies stamped at or
 * before `until`, in either direction (renaming onto an id that already names a profile merges
 * the two). Sorted; `key` alone when it was never reidentified.
 */
export function aliasGroup(edges: readonly AliasEdge[], key: string, until = Infinity): string[] {
  const linked = edges.filter((edge) => edge.t <= until);
  const group = new Set([key]);
  for (let grown = true; grown;) {
    grown = false;
    for (const { from, to } of linked) {
      if (group.has(from) === group.has(to)) continue;
      group.add(from).add(to);
      grown = true;
    }
  }
  return [...group].sort();
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
