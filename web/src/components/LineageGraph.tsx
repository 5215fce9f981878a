// The blast radius drawn as SVG: columns are dependency layers, so a
// consumer stands right of everything it reads; numbers are the rerun
// order. An ordered list under it says the same in words.
import type { Graph, GraphNode } from '../lineage';
import { enumName } from '../format';

const W = 200;
const H = 50;
const GAP_X = 170;
const GAP_Y = 26;
const PAD = 16;

function pos(n: GraphNode): { x: number; y: number } {
  return { x: PAD + n.layer * (W + GAP_X), y: PAD + n.row * (H + GAP_Y) };
}

export function LineageGraph({ graph }: { graph: Graph }) {
  const rows = Math.max(1, ...graph.nodes.map((n) => n.row + 1));
  const width = PAD * 2 + graph.layers * W + (graph.layers - 1) * GAP_X;
  const byId = new Map(graph.nodes.map((n) => [n.id, n]));
  // An edge that skips a layer dips under the row so it does not run
  // behind the nodes it passes.
  const skips = graph.edges.some((e) => (byId.get(e.to)?.layer ?? 0) - (byId.get(e.from)?.layer ?? 0) > 1);
  const height = PAD * 2 + rows * H + (rows - 1) * GAP_Y + 14 + (skips ? 44 : 0);
  const consumers = graph.nodes.filter((n) => n.kind === 'consumer').length;
  const label = `Blast radius of ${graph.nodes[0]?.id}: ${consumers} consumer${consumers === 1 ? '' : 's'} in ${graph.layers - 1} layer${graph.layers === 2 ? '' : 's'}`;
  return (
    <div class="graph-scroll">
      <svg class="lineage" width={width} height={height} viewBox={`0 0 ${width} ${height}`} role="img" aria-label={label} data-testid="blast-radius-graph">
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M 0 0 L 10 5 L 0 10 z" class="edge-head" />
          </marker>
        </defs>
        {graph.edges.map((e) => {
          const a = byId.get(e.from);
          const b = byId.get(e.to);
          if (!a || !b) return null;
          const p = pos(a);
          const q = pos(b);
          const x1 = p.x + W;
          const y1 = p.y + H / 2;
          const x2 = q.x;
          const y2 = q.y + H / 2;
          const mx = (x1 + x2) / 2;
          const back = x2 <= x1;
          const skip = b.layer - a.layer > 1;
          const dip = Math.max(p.y, q.y) + H + 36;
          let d = `M ${x1} ${y1} C ${mx} ${y1}, ${mx} ${y2}, ${x2} ${y2}`;
          let ly = (y1 + y2) / 2 - 5;
          if (back) {
            d = `M ${p.x + W / 2} ${p.y + H} C ${p.x + W / 2} ${p.y + H + 40}, ${q.x + W / 2} ${q.y + H + 40}, ${q.x + W / 2} ${q.y + H}`;
          } else if (skip) {
            d = `M ${p.x + W / 2} ${p.y + H} C ${p.x + W / 2} ${dip}, ${q.x + W / 2} ${dip}, ${q.x + W / 2} ${q.y + H}`;
            ly = dip - 8;
          }
          return (
            <g key={`${e.from}->${e.to}:${e.label}`} class={`edge ${e.usage === 'USAGE_KIND_JOIN_KEY' ? 'edge-join' : ''}`}>
              <path d={d} marker-end="url(#arrow)" />
              <text x={skip ? (p.x + q.x + W) / 2 : mx} y={ly} text-anchor="middle">
                {e.label.length > 26 ? `${e.label.slice(0, 25)}…` : e.label}
              </text>
            </g>
          );
        })}
        {graph.nodes.map((n) => {
          const { x, y } = pos(n);
          const usage = n.usages.map((u) => enumName(u, 'USAGE_KIND_').toLowerCase().replace('_', ' ')).join(', ');
          return (
            <g key={n.id} class={`node node-${n.kind}`} transform={`translate(${x},${y})`}>
              <rect width={W} height={H} rx="6" />
              <text x="10" y="20" class="node-name">
                {n.order ? `${n.order}. ` : ''}
                {n.id.length > 26 ? `${n.id.slice(0, 25)}…` : n.id}
              </text>
              <text x="10" y="38" class="node-meta">
                {n.kind === 'subject' ? 'source subject' : [n.owner, usage].filter(Boolean).join(' · ')}
              </text>
            </g>
          );
        })}
      </svg>
    </div>
  );
}
