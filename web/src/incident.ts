// What the incident and partition pages show, computed from what the API
// returns: the incident view is `seam incident -o json` (the same document,
// served by `seam up`), a partition is GetPartition's state. Pure
// functions, so the unit tests pin which partition is "the incident now"
// and which checks decided a verdict.
import type { Alert, Double, Int64, PartitionMonitor } from './types';
import { dbl, num } from './types';

/** IncidentStep is one step of the fix, as `seam incident` plans it. */
export interface IncidentStep {
  name: string;
  command: string;
  done: boolean;
  why?: string;
  result?: string;
  failed?: string;
}

export interface IncidentPartition {
  partition: string;
  status: string;
  verdict: string;
  sealed_verdict?: string;
  contract_version: number;
  amendments: number;
  received: number;
  accepted: number;
  quarantined: number;
  released: number;
  match_rate: number;
  sealed_match_rate: number;
}

export interface IncidentMigration {
  field: string;
  namespace: string;
  old: string;
  new: string;
  target: string;
  ready: boolean;
  how: string;
  format_exists: boolean;
  rule_to_set?: string;
  pairs?: number;
  pairs_from?: string;
  missing?: string;
  create_format?: { name: string; kind: string; pattern?: string };
}

export interface Reconciliation {
  from: string;
  to: string;
  held_before: number;
  released: number;
  still_held: number;
  adds_up: boolean;
  match_rate_after?: Record<string, number>;
  alerts_after?: { sequence: number; kind: string; field?: string; partition: string; state: string; resolved_by?: string }[];
}

/** IncidentView is `seam incident SUBJECT -o json`. */
export interface IncidentView {
  subject: string;
  active_version: number;
  next_version: number;
  since: string;
  contained: boolean;
  held: number;
  held_by_partition?: Record<string, number>;
  held_by_reason?: Record<string, number>;
  window?: string[];
  window_held: number;
  read: number;
  partitions?: IncidentPartition[];
  changed?: { sequence: number; kind: string; partition?: string; field?: string; message?: string }[] | null;
  blast_radius?: { consumer: string; depth: number; path?: string[]; owner?: string }[] | null;
  proposal?: {
    breaking?: boolean;
    yaml?: string;
    changes?: { level: string; rule: string; path: string; old?: string; new?: string; message?: string }[];
  };
  registry?: { verdict: string; notice_owed?: string; problems?: string[] | null };
  data_effective_time?: string;
  migrations?: IncidentMigration[] | null;
  dry_run?: { records: number; passed: number; remain?: Record<string, number>; examples?: string[] };
  dry_run_error?: string;
  steps?: IncidentStep[] | null;
  replay_id?: string;
  replay?: { replay_id: string; held: number; released: number; remaining: number; rerun_consumers?: string[] | null };
  reconciliation?: Reconciliation;
  error?: string;
}

/** ApplyEvent is one message of the apply stream. */
export type ApplyEvent =
  | { step: { index: number; of: number; step: IncidentStep } }
  | { progress: { partition: string; held: number; released: number; remaining: number; done: number; partitions: number } }
  | { incident: IncidentView };

/** span renders a window of partitions as FIRST..LAST (or the one). */
export function span(parts: string[] | undefined): string {
  if (!parts || parts.length === 0) return '–';
  return parts.length === 1 ? parts[0] : `${parts[0]}..${parts[parts.length - 1]}`;
}

/** ResolvedByFix are the registry problems the fix itself resolves (as the command tags them). */
const RESOLVED_BY_FIX = new Set(['IDMAP_FORMAT_NOT_FOUND', 'MIGRATION_NOT_READY', 'BREAKING_CHANGE_NEEDS_NOTICE']);

/** problemResolvedByFix says whether a registry problem ("REASON: message") goes away with the fix. */
export function problemResolvedByFix(problem: string): boolean {
  return RESOLVED_BY_FIX.has(problem.split(':')[0].trim());
}

/** CurrentIncident is the partition a source's page leads with. */
export interface CurrentIncident {
  partition: string;
  /** why: "BLOCKED" or "open alerts". */
  why: string;
  tone: 'bad' | 'warn';
  /** alerts are the partition's alerts still open. */
  alerts: Alert[];
  blocked: boolean;
}

function isOpen(a: Alert): boolean {
  return !a.state || !/RESOLVED$/.test(a.state);
}

/**
 * currentIncident picks what is going wrong now: the newest partition
 * that is BLOCKED or has an alert still open. A partition a backfill
 * repaired (re-judged, its alerts resolved) is history, however bad it was
 * on the day, and so is everything older than the newest trouble. null
 * when nothing is wrong.
 */
export function currentIncident(parts: PartitionMonitor[], alerts: Alert[]): CurrentIncident | null {
  const open = alerts.filter(isOpen);
  const sorted = [...parts].sort((a, b) => (a.partition < b.partition ? 1 : a.partition > b.partition ? -1 : 0));
  for (const p of sorted) {
    const own = open.filter((a) => a.partition === p.partition);
    const blocked = /BLOCKED$/.test(p.verdict ?? '') || (!p.verdict && num(p.blocked) > 0);
    if (blocked) return { partition: p.partition, why: 'BLOCKED', tone: 'bad', alerts: own, blocked };
    if (own.length > 0) {
      const critical = own.some((a) => a.severity === 'SEVERITY_CRITICAL');
      return { partition: p.partition, why: 'open alerts', tone: critical ? 'bad' : 'warn', alerts: own, blocked };
    }
  }
  return null;
}

/** CheckOutcome is one check's result on a partition (gate.v1.CheckOutcome over REST). */
export interface CheckOutcome {
  check?: string;
  rule?: string;
  policy?: string;
  field?: string;
  kind?: string;
  failures?: Int64;
  rows?: Int64;
  threshold?: { count?: Int64; fraction?: Double };
  exceeded?: boolean;
  observed?: Double | string;
  baseline?: Double | string;
  sample_positions?: Int64[];
  message?: string;
  baseline_partitions?: string[];
}

export interface PartitionState {
  subject?: string;
  partition: string;
  amendment?: number;
  attempt?: number;
  status?: string;
  verdict?: string;
  contract_version?: number;
  counts?: { received?: Int64; accepted?: Int64; quarantined?: Int64; duplicates?: Int64; released?: Int64; batches?: Int64 };
  match_rate?: Double;
  checks?: CheckOutcome[];
  will_block?: boolean;
  notice?: string;
  open_time?: string;
  seal_time?: string;
  update_time?: string;
  seal_cause?: string;
  sealed_by?: string;
  alerts?: Alert[];
  sealed_verdict?: string;
  sealed_match_rate?: Double;
}

/** metric reads a double that protojson may send as "NaN". */
export function metric(v: Double | string | undefined): number | null {
  if (v === undefined || v === null) return null;
  const n = typeof v === 'number' ? v : Number(v);
  return Number.isFinite(n) ? n : null;
}

const METRICS = new Set(['row_count', 'null_rate', 'mean', 'match_rate']);

/** isMetric says whether a check measures the partition rather than counting failing records. */
export function isMetric(c: CheckOutcome): boolean {
  return METRICS.has(c.kind ?? '');
}

/**
 * decided says whether a check decided the partition's verdict: for a
 * BLOCKED one, each BLOCK check over its threshold; for PASSED_WITH_ALERTS,
 * each ALERT check that fired (a metric out of bounds, or records failing
 * it). A check within bounds, or one that only quarantined records, did
 * not decide it.
 */
export function decided(c: CheckOutcome, verdict: string | undefined): boolean {
  const v = verdict ?? '';
  const policy = c.policy ?? '';
  if (v.endsWith('BLOCKED')) return policy.endsWith('BLOCK') && !!c.exceeded;
  if (v.endsWith('PASSED_WITH_ALERTS')) return policy.endsWith('ALERT') && (!!c.exceeded || (!isMetric(c) && num(c.failures) > 0));
  return false;
}

/**
 * thresholdText renders a check's threshold: "at most 10 records", "at
 * most 0.1% of records"; for a metric, the bounds its rule sets ("at
 * least 90%", "within 15% of the baseline").
 */
export function thresholdText(c: CheckOutcome): string {
  const t = c.threshold;
  if (!t) return isMetric(c) ? boundsText(c) : '–';
  if (t.count !== undefined && num(t.count) === 0) return 'no failure allowed';
  if (t.count !== undefined) return `at most ${num(t.count).toLocaleString('en-US')} record${num(t.count) === 1 ? '' : 's'}`;
  if (t.fraction !== undefined) return `at most ${fraction(dbl(t.fraction))} of records`;
  return '–';
}

/**
 * fraction renders a share with enough digits that the value shown is on
 * the same side of any bound as the value itself (0.004 → "0.4%").
 */
export function fraction(share: number): string {
  const p = share * 100;
  for (let d = 1; d <= 6; d++) {
    const s = p.toFixed(d);
    if (Number(s) === Number(p.toPrecision(12))) return `${Number(s)}%`;
  }
  return `${p.toFixed(6)}%`;
}

/** boundsText reads a metric check's bounds off its rule: "match_rate(customer_id, min: 0.9, baseline: 7d)". */
export function boundsText(c: CheckOutcome): string {
  const m = /\(([^)]*)\)/.exec(c.rule ?? '');
  if (!m) return '–';
  const args = new Map<string, number>();
  for (const part of m[1].split(',')) {
    const i = part.indexOf(':');
    if (i > 0) args.set(part.slice(0, i).trim(), Number(part.slice(i + 1).trim()));
  }
  const share = c.kind === 'match_rate' || c.kind === 'null_rate';
  const show = (v: number) => (share ? fraction(v) : v.toLocaleString('en-US'));
  const out: string[] = [];
  if (Number.isFinite(args.get('min'))) out.push(`at least ${show(args.get('min')!)}`);
  if (Number.isFinite(args.get('max'))) out.push(`at most ${show(args.get('max')!)}`);
  if (Number.isFinite(args.get('max_relative_change'))) out.push(`within ${fraction(args.get('max_relative_change')!)} of the baseline`);
  return out.length ? out.join(', ') : '–';
}

/**
 * share renders a measured share to two decimals, with more where two
 * would carry it onto or across a tenth of a percent it lies under or
 * over (89.999% is never "90.00%"), so it reads on the right side of a
 * bound such as 90%.
 */
export function share(v: number): string {
  const p = v * 100;
  for (let d = 2; d <= 6; d++) {
    const r = Number(p.toFixed(d));
    if (Math.floor(r * 10 + 1e-9) === Math.floor(p * 10 + 1e-9)) return `${p.toFixed(d)}%`;
  }
  return `${p.toFixed(6)}%`;
}

/**
 * rate renders a match rate as share does, and a missing or negative one
 * (no identifiers measured) as "–": the incident and partition pages have
 * no bound at hand beside each rate, so the rate keeps its own side of
 * every tenth of a percent.
 */
export function rate(v: number | null | undefined): string {
  return v === null || v === undefined || !Number.isFinite(v) || v < 0 ? '–' : share(v);
}

/** verdictWord says what a check's outcome was, in one word. */
export function verdictWord(c: CheckOutcome): string {
  if (isMetric(c)) return c.exceeded ? 'out of bounds' : 'within bounds';
  if (c.exceeded) return 'over threshold';
  return num(c.failures) > 0 ? 'failed by some' : 'passed';
}
