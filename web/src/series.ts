// The numbers behind a source's plots, computed from what the REST API
// returns: the gate's per-partition monitor, its alerts and the registry's
// backfill events. Pure functions, so the unit tests pin what a plot shows.
import type { Alert, ContractCheck, PartitionMonitor, PartitionVerdict, RegistryEvent } from './types';
import { dbl, num } from './types';

/** MatchRateCheck is a contract's match_rate(...) check, read from its rule. */
export interface MatchRateCheck {
  name: string;
  field: string;
  /** min is the absolute floor the check alerts under, if it has one. */
  min?: number;
  /** window is how many earlier partitions the baseline spans. */
  window: number;
}

const DEFAULT_WINDOW = 7;

/** parseArgs reads "min: 0.9, baseline: 7d" into a map. */
function parseArgs(s: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of s.split(',')) {
    const i = part.indexOf(':');
    if (i < 0) continue;
    out.set(part.slice(0, i).trim(), part.slice(i + 1).trim());
  }
  return out;
}

/** windowOf reads a baseline such as "7d", "7" or "7 partitions". */
function windowOf(s: string | undefined): number {
  if (!s) return DEFAULT_WINDOW;
  const m = /^(\d+)/.exec(s.trim());
  const n = m ? Number(m[1]) : NaN;
  return Number.isFinite(n) && n > 0 ? n : DEFAULT_WINDOW;
}

export function parseMatchRateChecks(checks: ContractCheck[] | undefined): MatchRateCheck[] {
  const out: MatchRateCheck[] = [];
  for (const c of checks ?? []) {
    const m = /^\s*match_rate\s*\(\s*([^,)\s]+)\s*(?:,([^)]*))?\)\s*$/.exec(c.rule ?? '');
    if (!m) continue;
    const args = parseArgs(m[2] ?? '');
    const min = args.has('min') ? Number(args.get('min')) : undefined;
    out.push({
      name: c.name ?? m[1],
      field: m[1],
      min: min !== undefined && Number.isFinite(min) ? min : undefined,
      window: windowOf(args.get('baseline')),
    });
  }
  return out;
}

export interface PartitionRow {
  partition: string;
  received: number;
  accepted: number;
  quarantined: number;
  blocked: number;
  released: number;
  /** matchRate is the share of identifiers that resolve now, after any backfill; null without identifiers. */
  matchRate: number | null;
  /**
   * judged is the match rate the partition was judged on: the sealed
   * verdict's when the gate seals partitions, else the one its MATCH_RATE
   * alert observed. null when nothing judged it low.
   */
  judged: number | null;
  judgedBy?: string;
  /** The baseline band: mean ± 3σ of the earlier partitions' match rates. */
  baseline: { mean: number; low: number; high: number } | null;
  alerts: Alert[];
  backfills: RegistryEvent[];
  status?: string;
  verdict?: string;
}

/** inWindow reports whether partition p lies in [from, to]; partitions sort as strings, as the gate keeps them. */
function inWindow(p: string, from?: string, to?: string): boolean {
  if (!from && !to) return false;
  return (!from || p >= from) && (!to || p <= to);
}

function band(values: number[]): PartitionRow['baseline'] {
  if (values.length < 3) return null;
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const sd = Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length);
  // A flat history still gets a visible band of half a point either side.
  const half = Math.max(3 * sd, 0.005);
  return { mean, low: Math.max(0, mean - half), high: Math.min(1, mean + half) };
}

export function buildRows(
  parts: PartitionMonitor[],
  alerts: Alert[],
  events: RegistryEvent[],
  opts: { window?: number; verdicts?: PartitionVerdict[] } = {},
): PartitionRow[] {
  const window = opts.window ?? DEFAULT_WINDOW;
  const sorted = [...parts].sort((a, b) => (a.partition < b.partition ? -1 : a.partition > b.partition ? 1 : 0));
  const verdicts = new Map((opts.verdicts ?? []).map((v) => [v.partition, v]));
  const backfills = events.filter((e) => e.type === 'EVENT_TYPE_BACKFILL_COMPLETED');
  const rows: PartitionRow[] = [];
  for (const p of sorted) {
    // protojson leaves out a zero rate; -1 means the contract has no identifier.
    const matchRate = dbl(p.match_rate);
    const own = alerts.filter((a) => a.partition === p.partition);
    let judged: number | null = null;
    let judgedBy: string | undefined;
    const v = verdicts.get(p.partition);
    if (v && v.match_rate !== undefined && Number.isFinite(dbl(v.match_rate))) {
      judged = dbl(v.match_rate);
      judgedBy = `sealed ${v.verdict ? v.verdict.replace(/^PARTITION_VERDICT_/, '') : 'verdict'}`;
    } else {
      for (const a of own) {
        if (a.kind !== 'MATCH_RATE') continue;
        const obs = dbl(a.observed);
        if (Number.isFinite(obs) && (judged === null || obs < judged)) {
          judged = obs;
          judgedBy = `${a.kind} alert #${a.sequence}`;
        }
      }
    }
    rows.push({
      partition: p.partition,
      received: num(p.received),
      accepted: num(p.accepted),
      quarantined: num(p.quarantined),
      blocked: num(p.blocked),
      released: num(p.released),
      matchRate: matchRate < 0 ? null : matchRate,
      judged,
      judgedBy,
      baseline: null,
      alerts: own,
      backfills: backfills.filter((e) => inWindow(p.partition, e.partition_from, e.partition_to)),
      status: v?.status ?? p.status,
      verdict: v?.verdict ?? p.verdict,
    });
  }
  for (let i = 0; i < rows.length; i++) {
    const prior = rows
      .slice(Math.max(0, i - window), i)
      .map((r) => r.matchRate)
      .filter((r): r is number => r !== null);
    rows[i].baseline = band(prior);
  }
  return rows;
}

/**
 * summarize says in one sentence what the match-rate plot shows, for its
 * caption and for screen readers: the lowest point, and where it stands now.
 */
export function summarize(rows: PartitionRow[], field = 'the identifier'): string {
  const withRate = rows.filter((r) => r.matchRate !== null);
  if (withRate.length === 0) return `No partition has ${field} to match yet.`;
  let low = withRate[0];
  let lowValue = Infinity;
  for (const r of withRate) {
    const seen = Math.min(r.matchRate ?? Infinity, r.judged ?? Infinity);
    if (seen < lowValue) {
      low = r;
      lowValue = seen;
    }
  }
  const last = withRate[withRate.length - 1];
  const f = (x: number) => `${(x * 100).toFixed(1)}%`;
  const normal = low.baseline ? ` against a baseline of ${f(low.baseline.mean)}` : '';
  const fell = low.baseline ? lowValue < low.baseline.low : false;
  if (!fell) {
    return `Match rate of ${field} between ${f(Math.min(...withRate.map((r) => r.matchRate!)))} and ${f(Math.max(...withRate.map((r) => r.matchRate!)))}; latest ${last.partition} at ${f(last.matchRate!)}.`;
  }
  const how = low.judged !== null && low.judged === lowValue && low.judgedBy ? ` (${low.judgedBy})` : '';
  let now = `; ${f(low.matchRate!)} there now`;
  if (low.backfills.length > 0) now += ' after the backfill';
  return `Match rate of ${field} fell to ${f(lowValue)} on ${low.partition}${how}${normal}${now}; latest ${last.partition} at ${f(last.matchRate!)}.`;
}

/**
 * sparkDomain is the vertical range of a table's mini-chart of shares: the
 * values and the floor, padded, so a series near 98% is not drawn as a
 * hairline at the top of 0..100%; never beyond 0..1.
 */
export function sparkDomain(values: (number | null)[], low?: number): [number, number] {
  const xs = values.filter((v): v is number => v !== null && Number.isFinite(v));
  if (low !== undefined && Number.isFinite(low)) xs.push(low);
  if (xs.length === 0) return [0, 1];
  let lo = Math.min(...xs);
  let hi = Math.max(...xs);
  const span = Math.max(hi - lo, 0.02);
  lo = Math.max(0, lo - span * 0.15);
  hi = Math.min(1, hi + span * 0.15);
  if (hi - lo < 0.02) {
    // Pinned at 0 or 1: open the range on the free side.
    if (lo === 0) hi = Math.min(1, lo + 0.02);
    else lo = Math.max(0, hi - 0.02);
  }
  return [lo, hi];
}
