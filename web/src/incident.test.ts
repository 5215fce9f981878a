import { describe, expect, it } from 'vitest';
import { currentIncident, decided, fraction, problemResolvedByFix, rate, share, span, thresholdText, verdictWord, type CheckOutcome } from './incident';
import type { Alert, PartitionMonitor } from './types';

const day = (d: number, extra: Partial<PartitionMonitor> = {}): PartitionMonitor => ({
  partition: `2026-03-${String(d).padStart(2, '0')}`,
  received: 5000,
  accepted: 4900,
  quarantined: 100,
  status: 'PARTITION_STATUS_SEALED',
  verdict: 'PARTITION_VERDICT_PASSED',
  ...extra,
});

const alert = (seq: number, d: number, state: string, extra: Partial<Alert> = {}): Alert => ({
  sequence: seq,
  partition: `2026-03-${String(d).padStart(2, '0')}`,
  kind: 'MATCH_RATE',
  state,
  ...extra,
});

describe('currentIncident', () => {
  // The drill: day 8 broke and was backfilled (its alerts resolved by the
  // replay, most of it released); day 11 is BLOCKED now.
  const parts = [day(7), day(8, { quarantined: 4900, released: 4800, verdict: 'PARTITION_VERDICT_PASSED' }), day(9), day(10)];
  const alerts = [alert(1, 8, 'ALERT_STATE_RESOLVED'), alert(2, 8, 'ALERT_STATE_RESOLVED', { kind: 'UNANNOUNCED_CHANGE' })];

  it('leads with the BLOCKED day, not the old backfilled one', () => {
    const blocked = day(11, { verdict: 'PARTITION_VERDICT_BLOCKED' });
    const got = currentIncident([...parts, blocked], [...alerts, alert(3, 11, 'ALERT_STATE_OPEN', { kind: 'BLOCKED', severity: 'SEVERITY_CRITICAL' })]);
    expect(got?.partition).toBe('2026-03-11');
    expect(got?.why).toBe('BLOCKED');
    expect(got?.tone).toBe('bad');
    expect(got?.alerts.map((a) => a.sequence)).toEqual([3]);
  });

  it('finds nothing once the backfill resolved the alerts', () => {
    expect(currentIncident(parts, alerts)).toBeNull();
  });

  it('names an older partition whose alert is still open, acknowledged or not', () => {
    const got = currentIncident(parts, [...alerts, alert(4, 7, 'ALERT_STATE_ACKNOWLEDGED', { kind: 'MEAN_DRIFT' })]);
    expect(got?.partition).toBe('2026-03-07');
    expect(got?.why).toBe('open alerts');
    expect(got?.tone).toBe('warn');
  });

  it('reads a partition blocked before sealing existed by its counts', () => {
    expect(currentIncident([day(9, { verdict: undefined, blocked: 40 })], [])?.why).toBe('BLOCKED');
  });
});

describe('decided', () => {
  const block: CheckOutcome = { check: 'customer_present', policy: 'POLICY_BLOCK', kind: 'required', failures: 40, rows: 10000, exceeded: true, threshold: { fraction: 0.001 } };
  const quarantine: CheckOutcome = { check: 'currency.enum', policy: 'POLICY_QUARANTINE', kind: 'enum', failures: 3, rows: 10000 };
  const drift: CheckOutcome = { check: 'aov_drift', policy: 'POLICY_ALERT', kind: 'mean', observed: 102, baseline: 85, exceeded: true };
  const match: CheckOutcome = { check: 'customer_match', policy: 'POLICY_ALERT', kind: 'match_rate', observed: 0.98, baseline: 0.979 };

  it('names the BLOCK checks over their threshold for a BLOCKED partition', () => {
    const v = 'PARTITION_VERDICT_BLOCKED';
    expect([block, quarantine, drift, match].filter((c) => decided(c, v)).map((c) => c.check)).toEqual(['customer_present']);
  });

  it('names the ALERT checks that fired for PASSED_WITH_ALERTS', () => {
    const v = 'PARTITION_VERDICT_PASSED_WITH_ALERTS';
    const recordAlert: CheckOutcome = { check: 'coupon.pattern', policy: 'POLICY_ALERT', kind: 'pattern', failures: 2, rows: 100 };
    expect([block, quarantine, drift, match, recordAlert].filter((c) => decided(c, v)).map((c) => c.check)).toEqual(['aov_drift', 'coupon.pattern']);
  });

  it('names none for a partition that passed', () => {
    expect([block, drift].some((c) => decided(c, 'PARTITION_VERDICT_PASSED'))).toBe(false);
  });

  it('says what each outcome was', () => {
    expect([block, quarantine, drift, match].map(verdictWord)).toEqual(['over threshold', 'failed by some', 'out of bounds', 'within bounds']);
  });
});

describe('thresholds', () => {
  it('keeps the digits a threshold has', () => {
    expect(fraction(0.004)).toBe('0.4%');
    expect(fraction(0.0005)).toBe('0.05%');
    expect(fraction(0.1)).toBe('10%');
    expect(thresholdText({ threshold: { count: 1 } })).toBe('at most 1 record');
    expect(thresholdText({ threshold: { count: 0 } })).toBe('no failure allowed');
    expect(thresholdText({ threshold: { count: '2500' } })).toBe('at most 2,500 records');
    expect(thresholdText({ threshold: { fraction: 0.001 } })).toBe('at most 0.1% of records');
    expect(thresholdText({})).toBe('–');
  });
  it("reads a metric's bounds off its rule", () => {
    expect(thresholdText({ kind: 'match_rate', rule: 'match_rate(customer_id, min: 0.9, baseline: 7d)' })).toBe('at least 90%');
    expect(thresholdText({ kind: 'mean', rule: 'mean_drift(amount, max_relative_change: 0.15, baseline: 7d)' })).toBe('within 15% of the baseline');
    expect(thresholdText({ kind: 'row_count', rule: 'row_count(min: 1000)' })).toBe('at least 1,000');
  });
  it('never shows a measured share on the other side of a bound', () => {
    expect(share(0.9792)).toBe('97.92%');
    expect(share(0.98117143)).toBe('98.12%');
    expect(share(0.89999)).toBe('89.999%');
    expect(share(0.8999999)).toBe('89.99999%');
    expect(share(0.9)).toBe('90.00%');
    expect(rate(0.89999)).toBe('89.999%');
    expect(rate(undefined)).toBe('–');
    expect(rate(null)).toBe('–');
    expect(rate(-1)).toBe('–');
    expect(share(0.90004)).toBe('90.00%');
  });
});

describe('the plan', () => {
  it('tags the registry problems the fix resolves, as the command does', () => {
    expect(problemResolvedByFix('IDMAP_FORMAT_NOT_FOUND: field merchant_id names format "uuid"')).toBe(true);
    expect(problemResolvedByFix('BREAKING_CHANGE_NEEDS_NOTICE: owes 14d')).toBe(true);
    expect(problemResolvedByFix('OVERRIDE_REQUIRES_ADMIN: only an admin')).toBe(false);
    expect(span(['2026-03-08'])).toBe('2026-03-08');
    expect(span(['2026-03-08', '2026-03-09', '2026-03-10'])).toBe('2026-03-08..2026-03-10');
  });
});
