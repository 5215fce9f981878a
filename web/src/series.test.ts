import { describe, expect, it } from 'vitest';
import { buildRows, parseMatchRateChecks, sparkDomain, summarize } from './series';
import type { Alert, PartitionMonitor, RegistryEvent } from './types';

// Ten days shaped like the incident drill: about 98% until day 8, when the
// source switched to UUIDs; the MATCH_RATE alert saw 9.9%, the backfill of
// day 8 brought it to 97.9%.
function drill(): { parts: PartitionMonitor[]; alerts: Alert[]; events: RegistryEvent[] } {
  const rates = [0.983, 0.98, 0.981, 0.982, 0.982, 0.983, 0.981, 0.979, 0.984, 0.98];
  const parts = rates.map((r, i) => ({
    partition: `2026-03-${String(i + 1).padStart(2, '0')}`,
    received: '5000',
    accepted: i === 7 ? '100' : '5000',
    quarantined: i === 7 ? '4900' : undefined,
    released: i === 7 ? '4797' : undefined,
    match_rate: r,
  }));
  const alerts: Alert[] = [
    { sequence: '1', partition: '2026-03-05', kind: 'MEAN_DRIFT', severity: 'SEVERITY_WARNING', observed: 101.05 },
    { sequence: '6', partition: '2026-03-08', kind: 'MATCH_RATE', severity: 'SEVERITY_CRITICAL', observed: 0.099, baseline: 0.981 },
    { sequence: '7', partition: '2026-03-08', kind: 'UNANNOUNCED_CHANGE', severity: 'SEVERITY_CRITICAL', observed: 0.9, baseline: 'NaN' },
  ];
  const events: RegistryEvent[] = [
    { sequence: '14', type: 'EVENT_TYPE_BACKFILL_COMPLETED', partition_from: '2026-03-08', partition_to: '2026-03-08', attributes: { released: '4797' } },
    { sequence: '9', type: 'EVENT_TYPE_SOURCE_CONTAINED' },
  ];
  // The API answers in partition order; shuffle to check the rows sort.
  return { parts: [parts[9], ...parts.slice(0, 9)], alerts, events };
}

describe('parseMatchRateChecks', () => {
  it('reads the field, the floor and the baseline window', () => {
    expect(
      parseMatchRateChecks([
        { name: 'customer_present', rule: 'required(customer_id)' },
        { name: 'customer_match', rule: 'match_rate(customer_id, min: 0.9, baseline: 7d)' },
        { name: 'acct', rule: 'match_rate(account_ref)' },
        { name: 'weird', rule: 'match_rate(x, min: lots, baseline: soon)' },
      ]),
    ).toEqual([
      { name: 'customer_match', field: 'customer_id', min: 0.9, window: 7 },
      { name: 'acct', field: 'account_ref', min: undefined, window: 7 },
      { name: 'weird', field: 'x', min: undefined, window: 7 },
    ]);
  });
  it('reads a bare number of partitions', () => {
    expect(parseMatchRateChecks([{ rule: 'match_rate(id, baseline: 3)' }])[0].window).toBe(3);
  });
});

describe('buildRows', () => {
  it('sorts partitions and reads the counters', () => {
    const { parts, alerts, events } = drill();
    const rows = buildRows(parts, alerts, events);
    expect(rows.map((r) => r.partition)).toEqual([...Array(10)].map((_, i) => `2026-03-${String(i + 1).padStart(2, '0')}`));
    expect(rows[7]).toMatchObject({ received: 5000, accepted: 100, quarantined: 4900, released: 4797, blocked: 0, matchRate: 0.979 });
  });

  it('keeps the drop a backfill repaired: judged by the alert, now recovered', () => {
    const { parts, alerts, events } = drill();
    const rows = buildRows(parts, alerts, events);
    const day8 = rows[7];
    expect(day8.judged).toBe(0.099);
    expect(day8.judgedBy).toBe('MATCH_RATE alert #6');
    expect(day8.backfills.map((e) => e.sequence)).toEqual(['14']);
    expect(day8.alerts.map((a) => a.kind)).toEqual(['MATCH_RATE', 'UNANNOUNCED_CHANGE']);
    // Only MATCH_RATE alerts judge the match rate; the drift day is not low.
    expect(rows[4].judged).toBeNull();
    expect(rows[4].alerts).toHaveLength(1);
    expect(rows[8].backfills).toHaveLength(0);
  });

  it('prefers a sealed verdict to the alert when the gate seals partitions', () => {
    const { parts, alerts, events } = drill();
    const rows = buildRows(parts, alerts, events, {
      verdicts: [{ partition: '2026-03-08', status: 'PARTITION_STATUS_SEALED', verdict: 'PARTITION_VERDICT_PASSED_WITH_ALERTS', match_rate: 0.02 }],
    });
    expect(rows[7].judged).toBe(0.02);
    expect(rows[7].judgedBy).toBe('sealed PASSED_WITH_ALERTS');
    expect(rows[7].verdict).toBe('PARTITION_VERDICT_PASSED_WITH_ALERTS');
  });

  it('bands the baseline from the partitions before, once there are three', () => {
    const { parts, alerts, events } = drill();
    const rows = buildRows(parts, alerts, events, { window: 7 });
    expect(rows[0].baseline).toBeNull();
    expect(rows[2].baseline).toBeNull();
    const b = rows[7].baseline!;
    expect(b.mean).toBeCloseTo((0.983 + 0.98 + 0.981 + 0.982 + 0.982 + 0.983 + 0.981) / 7, 6);
    expect(b.low).toBeLessThan(b.mean);
    expect(b.high).toBeGreaterThan(b.mean);
    expect(b.low).toBeGreaterThan(0.9);
    expect(rows[7].judged!).toBeLessThan(b.low);
  });

  it('has no rate for a contract without identifiers, and a zero rate when protojson leaves it out', () => {
    const rows = buildRows([{ partition: 'a', match_rate: -1 }, { partition: 'b' }], [], []);
    expect(rows[0].matchRate).toBeNull();
    expect(rows[1].matchRate).toBe(0);
  });
});

describe('summarize', () => {
  it('says where the rate fell and where it stands after the backfill', () => {
    const { parts, alerts, events } = drill();
    expect(summarize(buildRows(parts, alerts, events), 'customer_id')).toBe(
      'Match rate of customer_id fell to 9.9% on 2026-03-08 (MATCH_RATE alert #6) against a baseline of 98.2%; 97.9% there now after the backfill; latest 2026-03-10 at 98.0%.',
    );
  });
  it('says the range when nothing fell', () => {
    const rows = buildRows(
      ['a', 'b', 'c', 'd'].map((p, i) => ({ partition: p, match_rate: 0.97 + i * 0.001 })),
      [],
      [],
    );
    expect(summarize(rows, 'id')).toBe('Match rate of id between 97.0% and 97.3%; latest d at 97.3%.');
  });
  it('says when there is nothing to match', () => {
    expect(summarize(buildRows([{ partition: 'a', match_rate: -1 }], [], []))).toBe('No partition has the identifier to match yet.');
  });
});

describe('sparkDomain', () => {
  it('spans the values and the floor, so a series near 98% is not a hairline', () => {
    const [lo, hi] = sparkDomain([0.98, 0.983, 0.979, null, 0.981], 0.9);
    expect(lo).toBeLessThan(0.9);
    expect(lo).toBeGreaterThan(0.85);
    expect(hi).toBeGreaterThan(0.983);
    expect(hi).toBeLessThanOrEqual(1);
    // The drop of the drill's day 8 (9.9%) is in range.
    const [lo8] = sparkDomain([0.98, 0.099, 0.979], 0.9);
    expect(lo8).toBeLessThan(0.099);
    expect(lo8).toBeGreaterThanOrEqual(0);
  });
  it('keeps a flat series visible and within 0..1', () => {
    const [lo, hi] = sparkDomain([1, 1, 1]);
    expect(hi).toBe(1);
    expect(hi - lo).toBeGreaterThanOrEqual(0.02);
    expect(sparkDomain([null, null])).toEqual([0, 1]);
  });
});
