import { describe, expect, it } from 'vitest';
import { countdown, decodeRaw, duration, pct, time } from './format';

describe('format', () => {
  it('renders shares and refuses the no-identifier rate', () => {
    expect(pct(0.9792)).toBe('97.9%');
    expect(pct(-1)).toBe('–');
    expect(pct(null)).toBe('–');
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
