// The blast radius as a graph: the subject, every consumer a change to it
// reaches, and the edges between them (a consumer reads the subject's
// fields, or a dataset another consumer produces). Layers follow the
// longest path from the subject, so reading left to right is the order in
// which consumers must rerun after a backfill.
import type { AffectedConsumer, Consumer } from './types';

export interface GraphNode {
  id: string;
  kind: 'subject' | 'consumer';
  owner?: string;
  layer: number;
  row: number;
  /** order is the position in the rerun order, from 1; 0 for the subject. */
  order: number;
  usages: string[];
}

export interface GraphEdge {
  from: string;
  to: string;
  /** label says what flows: fields of the subject, or a dataset. */
  label: string;
  usage?: string;
}

export interface Graph {
  nodes: GraphNode[];
  edges: GraphEdge[];
  layers: number;
  /** cycle names a consumer caught in a dependency cycle, if any. */
  cycle?: string;
}

export function buildGraph(subject: string, affected: AffectedConsumer[], consumers: Consumer[], rerunOrder: string[]): Graph {
  const reached = new Set(affected.map((a) => a.consumer));
  const byName = new Map(consumers.map((c) => [c.name, c]));
  const producers = new Map<string, string[]>();
  for (const c of consumers) {
    if (!reached.has(c.name)) continue;
    for (const d of c.produces ?? []) producers.set(d, [...(producers.get(d) ?? []), c.name]);
  }
  const edges: GraphEdge[] = [];
  for (const a of affected) {
    const c = byName.get(a.consumer);
    const inputs = c?.inputs ?? [];
    let linked = false;
    for (const input of inputs) {
      if (input.subject === subject) {
        edges.push({ from: subject, to: a.consumer, label: (input.fields ?? []).join(', ') || 'all fields', usage: input.usage });
        linked = true;
      } else if (input.dataset) {
        for (const p of producers.get(input.dataset) ?? []) {
          if (p === a.consumer) continue;
          edges.push({ from: p, to: a.consumer, label: input.dataset, usage: input.usage });
          linked = true;
        }
      }
    }
    if (!linked) {
      // Lineage the consumer list does not explain (it changed since, or
      // the caller may not list consumers): draw the blast radius's own path.
      const path = a.path ?? [];
      const prev = path.length >= 2 ? path[path.length - 2] : subject;
      const from = reached.has(prev) ? prev : subject;
      edges.push({ from, to: a.consumer, label: (a.fields ?? []).join(', ') });
    }
  }

  // Longest path from the subject decides the layer.
  const layer = new Map<string, number>([[subject, 0]]);
  const names = [...reached];
  let cycle: string | undefined;
  for (let round = 0; round <= names.length; round++) {
    let changed = false;
    for (const e of edges) {
      const l = (layer.get(e.from) ?? 0) + 1;
      if ((layer.get(e.to) ?? 0) < l) {
        layer.set(e.to, l);
        changed = true;
      }
    }
    if (!changed) break;
    if (round === names.length) cycle = edges.find((e) => (layer.get(e.to) ?? 0) > names.length)?.to ?? names[0];
  }
  for (const n of names) if (!layer.has(n)) layer.set(n, 1);

  const order = new Map(rerunOrder.map((n, i) => [n, i + 1]));
  const nodes: GraphNode[] = [{ id: subject, kind: 'subject', layer: 0, row: 0, order: 0, usages: [] }];
  const sortedNames = names.sort((a, b) => (order.get(a) ?? 1e9) - (order.get(b) ?? 1e9) || a.localeCompare(b));
  const rows = new Map<number, number>();
  for (const n of sortedNames) {
    const l = Math.min(layer.get(n) ?? 1, names.length + 1);
    const row = rows.get(l) ?? 0;
    rows.set(l, row + 1);
    const a = affected.find((x) => x.consumer === n);
    nodes.push({
      id: n,
      kind: 'consumer',
      owner: a?.owner ?? byName.get(n)?.owner,
      layer: l,
      row,
      order: order.get(n) ?? 0,
      usages: a?.usages ?? [],
    });
  }
  const layers = Math.max(0, ...nodes.map((n) => n.layer)) + 1;
  return { nodes, edges, layers, cycle };
}
