import { describe, expect, it } from 'vitest';
import { boundOf, countdown, decodeRaw, duration, pct, time } from './format';

describe('format', () => {
  it('renders shares and refuses the no-identifier rate', () => {
    expect(pct(0.9792)).toBe('97.9%');
    expect(pct(-1)).toBe('–');
    expect(pct(null)).toBe('–');
  });
  it('never rounds a share onto or across the bound it is shown against', () => {
    // The case: 89.99% against a 90% minimum is not "90.0%".
    expect(pct(0.8999, 1, 0.9)).toBe('89.99%');
    expect(pct(0.89999, 1, 0.9)).toBe('89.999%');
    expect(pct(0.899999, 1, 0.9)).toBe('89.9999%');
    // Closer than the digits allow: cut toward its side, never rounded up.
    expect(pct(0.8999999999, 1, 0.9)).toBe('89.9999%');
    expect(pct(0.9000000001, 1, 0.9)).toBe('90.0001%');
    // Above a maximum stays above it.
    expect(pct(0.05001, 1, 0.05)).toBe('5.001%');
    // Far from the bound, or on it, the usual digits.
    expect(pct(0.979, 1, 0.9)).toBe('97.9%');
    expect(pct(0.9, 1, 0.9)).toBe('90.0%');
    expect(pct(0.89, 1, 0.9)).toBe('89.0%');
    expect(pct(0.9794, 1, 0.98)).toBe('97.9%');
    expect(pct(0.97996, 1, 0.98)).toBe('97.996%');
    // Without a bound, plain rounding.
    expect(pct(0.8999)).toBe('90.0%');
    // Every share of a fine grid near 90% stays on its side.
    for (let i = -2000; i <= 2000; i++) {
      const share = 0.9 + i / 1e6;
      const shown = Number(pct(share, 1, 0.9).replace('%', ''));
      if (i < 0) expect(shown, `share ${share}`).toBeLessThan(90);
      if (i > 0) expect(shown, `share ${share}`).toBeGreaterThan(90);
    }
  });
  it('reads the bound a check message names', () => {
    expect(boundOf('partition 2026-11-11 of fleet.trips: match rate of driver_id is 89.99%, below the minimum 90%')).toBeCloseTo(0.9);
    expect(boundOf('null rate of email is 7.5%, above the maximum 5%')).toBeCloseTo(0.05);
    expect(boundOf('mean of amount moved from a baseline of 85 to 102')).toBeUndefined();
  });
  it('counts down to an effective time', () => {
    const now = Date.parse('2026-11-29T20:03:23Z');
    expect(countdown('2026-12-13T20:03:23Z', now)).toBe('in 14d 0h 0m 0s');
    expect(countdown('2026-11-29T20:03:20Z', now)).toBe('due 3s ago');
    expect(duration(3_723_000)).toBe('1h 2m 3s');
  });
  it('renders UTC times to the second', () => {
    expect(time('2026-11-30T08:18:17.225825280Z')).toBe('2026-11-30 08:18:17Z');
    expect(time(undefined)).toBe('–');
  });
  it('shows UTF-8 records as text and anything else as hex', () => {
    const json = btoa('{"order_id":"ORD-1","customer_id":"7c9e"}');
    expect(decodeRaw(json)).toEqual({ text: '{"order_id":"ORD-1","customer_id":"7c9e"}', utf8: true, bytes: 41 });
    const bad = decodeRaw(btoa(String.fromCharCode(0x7b, 0xff, 0xfe, 0x41)));
    expect(bad.utf8).toBe(false);
    expect(bad.text).toBe(`00000000  ${'7b ff fe 41'.padEnd(47)}  {..A`);
  });
});
