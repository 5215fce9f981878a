// Plots of a source's partitions over time, drawn with uPlot: one slot per
// partition on the x axis (partitions are names, often dates), markers for
// alerts and backfills on the axis, and a band for the match rate's
// baseline. Each plot is a <figure> whose caption says in words what it
// shows; the numbers are also in the table under the plots.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { useEffect, useRef } from 'preact/hooks';
import type { PartitionRow } from '../series';
import { pct } from '../format';

export interface Marker {
  /** index of the partition */
  x: number;
  label: string;
  color: string;
  dash?: number[];
}

/** markersPlugin draws a thin vertical line per marker and its label in a box at the top. */
function markersPlugin(markers: Marker[]): uPlot.Plugin {
  return {
    hooks: {
      draw: [
        (u: uPlot) => {
          const ctx = u.ctx;
          const { top, height, left, width } = u.bbox;
          const dpr = devicePixelRatio || 1;
          ctx.save();
          const perX = new Map<number, number>();
          ctx.font = `${11 * dpr}px system-ui, sans-serif`;
          ctx.textBaseline = 'middle';
          ctx.textAlign = 'left';
          // On a narrow plot (a phone) a marker shows only its sign: the
          // words are in the caption and the table below.
          const narrow = width / dpr < 560;
          for (const m of markers) {
            const label = narrow ? m.label.split(' ')[0] : m.label;
            const x = Math.round(u.valToPos(m.x, 'x', true));
            const stack = perX.get(m.x) ?? 0;
            perX.set(m.x, stack + 1);
            ctx.globalAlpha = 0.55;
            ctx.strokeStyle = m.color;
            ctx.lineWidth = 1.5 * dpr;
            ctx.setLineDash((m.dash ?? [3, 3]).map((d) => d * dpr));
            ctx.beginPath();
            ctx.moveTo(x, top);
            ctx.lineTo(x, top + height);
            ctx.stroke();
            ctx.setLineDash([]);
            ctx.globalAlpha = 1;
            const w = ctx.measureText(label).width + 8 * dpr;
            const h = 15 * dpr;
            const y = top - 26 * dpr + stack * (h + 2 * dpr);
            const bx = Math.min(Math.max(x - w / 2, left), left + width - w);
            ctx.fillStyle = '#ffffff';
            ctx.strokeStyle = m.color;
            ctx.lineWidth = 1 * dpr;
            ctx.fillRect(bx, y, w, h);
            ctx.strokeRect(bx, y, w, h);
            ctx.fillStyle = m.color;
            ctx.fillText(label, bx + 4 * dpr, y + h / 2);
          }
          ctx.restore();
        },
      ],
    },
  };
}

function axisX(labels: string[]): uPlot.Axis {
  return {
    space: 60,
    splits: (u, _axis, min, max) => {
      // One label per partition while they fit (about 64 px each), else
      // every step-th one, so labels never overlap on a narrow screen.
      const px = u.bbox.width / (devicePixelRatio || 1) || 600;
      const n = Math.floor(max) - Math.ceil(min) + 1;
      const step = Math.max(1, Math.ceil((n * 64) / px));
      const out: number[] = [];
      for (let i = Math.ceil(min); i <= Math.floor(max); i += step) out.push(i);
      return out;
    },
    values: (_u, splits) => splits.map((i) => labels[i] ?? ''),
    grid: { show: false },
  };
}

export function Plot({ opts, data, id, caption, title }: { opts: uPlot.Options; data: uPlot.AlignedData; id: string; caption: string; title: string }) {
  const host = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const width = Math.max(320, el.clientWidth);
    const u = new uPlot({ ...opts, width }, data, el);
    const ro = new ResizeObserver(() => {
      const w = Math.max(320, el.clientWidth);
      if (Math.abs(w - u.width) > 2) u.setSize({ width: w, height: opts.height });
    });
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
    };
  }, [opts, data]);
  return (
    <figure class="plot" id={id} data-testid={id}>
      <figcaption>
        <strong>{title}</strong> <span class="plot-caption">{caption}</span>
      </figcaption>
      <div ref={host} class="plot-host" role="img" aria-label={`${title}. ${caption}`} />
    </figure>
  );
}

const C = {
  received: '#64748b',
  accepted: '#15803d',
  quarantined: '#d97706',
  blocked: '#b91c1c',
  released: '#2563eb',
  rate: '#0f766e',
  judged: '#b91c1c',
  band: 'rgba(15,118,110,0.14)',
  floor: '#9f1239',
  alertCritical: '#b91c1c',
  alertWarning: '#d97706',
  alertInfo: '#2563eb',
  backfill: '#2563eb',
};

function markersFor(rows: PartitionRow[]): Marker[] {
  const out: Marker[] = [];
  rows.forEach((r, i) => {
    const kinds = [...new Set(r.alerts.map((a) => a.kind ?? 'ALERT'))];
    if (kinds.length) {
      const critical = r.alerts.some((a) => a.severity === 'SEVERITY_CRITICAL');
      const warning = r.alerts.some((a) => a.severity === 'SEVERITY_WARNING');
      out.push({
        x: i,
        label: `⚠ ${kinds.join(', ')}`,
        color: critical ? C.alertCritical : warning ? C.alertWarning : C.alertInfo,
      });
    }
    if (r.backfills.length) out.push({ x: i, label: '↺ backfill', color: C.backfill, dash: [4, 3] });
  });
  return out;
}

/**
 * countsPlot stacks each partition's accepted, quarantined and blocked
 * records into one bar (its height is what was received) and draws what
 * replays released since as a line.
 */
export function countsPlot(rows: PartitionRow[]): { opts: uPlot.Options; data: uPlot.AlignedData } {
  const labels = rows.map((r) => r.partition);
  const x = rows.map((_, i) => i);
  const bars = uPlot.paths.bars!({ size: [0.62, 70] });
  const val = (pick: (r: PartitionRow) => number) => (_u: uPlot, _v: number, _s: number, i: number | null) =>
    i === null || i === undefined || !rows[i] ? '–' : pick(rows[i]).toLocaleString('en-US');
  const bar = (label: string, color: string, pick: (r: PartitionRow) => number): uPlot.Series => ({
    label,
    stroke: color,
    fill: color,
    width: 0,
    paths: bars,
    points: { show: false },
    value: val(pick),
  });
  return {
    opts: {
      width: 800,
      height: 230,
      padding: [30, 8, 0, 0],
      cursor: { points: { show: false } },
      legend: { live: true },
      scales: { x: { time: false, range: [-0.5, Math.max(0.5, rows.length - 0.5)] }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.08)] } },
      axes: [axisX(labels), { size: 60, values: (_u, v) => v.map((n) => n.toLocaleString('en-US')) }],
      series: [
        { label: 'partition', value: (_u, v) => labels[v] ?? '' },
        // Drawn in this order, the shorter bars paint over the taller: a stack.
        bar('blocked', C.blocked, (r) => r.blocked),
        bar('quarantined', C.quarantined, (r) => r.quarantined),
        bar('accepted', C.accepted, (r) => r.accepted),
        { label: 'released by replays', stroke: C.released, width: 2, points: { show: true, size: 7, fill: C.released }, value: val((r) => r.released) },
      ],
      plugins: [markersPlugin(markersFor(rows))],
    },
    data: [
      x,
      rows.map((r) => r.accepted + r.quarantined + r.blocked),
      rows.map((r) => r.accepted + r.quarantined),
      rows.map((r) => r.accepted),
      rows.map((r) => r.released),
    ],
  };
}

/** matchRatePlot shows the match rate now, the rate a partition was judged on, the baseline band and the check's floor. */
export function matchRatePlot(rows: PartitionRow[], floor?: number): { opts: uPlot.Options; data: uPlot.AlignedData } {
  const labels = rows.map((r) => r.partition);
  const x = rows.map((_, i) => i);
  // Against the floor, rounding never puts a rate on the wrong side of it.
  const pctVal = (_u: uPlot, v: number | null) => (v === null || v === undefined ? '–' : pct(v, 1, floor));
  const series: uPlot.Series[] = [
    { label: 'partition', value: (_u, v) => labels[v] ?? '' },
    { label: 'baseline band', stroke: 'rgba(15,118,110,0.35)', width: 1, points: { show: false }, value: pctVal },
    { label: 'band low', stroke: 'rgba(15,118,110,0.35)', width: 1, points: { show: false }, value: pctVal },
    {
      label: 'before the backfill',
      stroke: C.judged,
      width: 2,
      dash: [6, 4],
      points: { show: true, size: 8, stroke: C.judged, fill: '#fff', width: 2 },
      value: pctVal,
    },
    { label: 'match rate now', stroke: C.rate, width: 2.5, points: { show: true, size: 6, fill: C.rate }, value: pctVal },
  ];
  const data: uPlot.AlignedData = [
    x,
    rows.map((r) => r.baseline?.high ?? null),
    rows.map((r) => r.baseline?.low ?? null),
    // Before a backfill a partition stood at the rate it was judged on;
    // a partition no replay touched still stands where it was received.
    rows.map((r) => (r.backfills.length ? r.judged : r.matchRate)),
    rows.map((r) => r.matchRate),
  ];
  if (floor !== undefined) {
    series.push({ label: `minimum ${(floor * 100).toFixed(0)}%`, stroke: C.floor, width: 1.5, dash: [6, 4], points: { show: false }, value: pctVal });
    (data as (number | null)[][]).push(rows.map(() => floor));
  }
  return {
    opts: {
      width: 800,
      height: 240,
      padding: [30, 8, 0, 0],
      legend: { live: true },
      scales: { x: { time: false, range: [-0.5, Math.max(0.5, rows.length - 0.5)] }, y: { range: [0, 1.05] } },
      axes: [axisX(labels), { size: 60, values: (_u, v) => v.map((n) => `${Math.round(n * 100)}%`), splits: () => [0, 0.25, 0.5, 0.75, 1] }],
      series,
      bands: [{ series: [1, 2], fill: C.band }],
      plugins: [markersPlugin(markersFor(rows))],
    },
    data,
  };
}
