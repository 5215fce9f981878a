import { describe, expect, it } from 'vitest';
import { affects } from './live';
import type { RegistryEvent } from './types';

const ev = (type: string, subject = 'shop.orders'): RegistryEvent => ({ sequence: '1', type: `EVENT_TYPE_${type}`, subject });

describe('affects', () => {
  it('reloads a page on the changes it shows, of its subject', () => {
    expect(affects(ev('PARTITION_SEALED'), ['partitions'])).toBe(true);
    expect(affects(ev('PARTITION_SEALED'), ['partitions'], 'shop.orders')).toBe(true);
    expect(affects(ev('PARTITION_SEALED'), ['partitions'], 'fleet.trips')).toBe(false);
    expect(affects(ev('ALERT_RESOLVED'), ['alerts'])).toBe(true);
    expect(affects(ev('ALERT_ACKNOWLEDGED'), ['partitions', 'containment'])).toBe(false);
    expect(affects(ev('SOURCE_CONTAINED'), ['containment'], 'shop.orders')).toBe(true);
    expect(affects(ev('VERSION_ACTIVATED'), ['versions'])).toBe(true);
    // A backfill changes the partitions it released into.
    expect(affects(ev('BACKFILL_COMPLETED'), ['partitions'])).toBe(true);
    expect(affects(ev('CONSUMER_REGISTERED', ''), ['alerts', 'partitions'])).toBe(false);
  });
  it('reloads every page after a gap or on a poll', () => {
    expect(affects(null, ['versions'], 'shop.orders')).toBe(true);
  });
});
