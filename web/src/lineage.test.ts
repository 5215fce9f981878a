import { describe, expect, it } from 'vitest';
import { buildGraph } from './lineage';
import type { AffectedConsumer, Consumer } from './types';

const affected: AffectedConsumer[] = [
  { consumer: 'dash.daily_revenue', path: ['shop.orders.amount', 'dash.daily_revenue'], depth: 1, owner: 'team-bi', usages: ['USAGE_KIND_FEATURE'] },
  { consumer: 'features.customer_ltv', path: ['shop.orders.customer_id', 'features.customer_ltv'], depth: 1, owner: 'team-ml', usages: ['USAGE_KIND_JOIN_KEY'] },
];
const consumers: Consumer[] = [
  {
    name: 'dash.daily_revenue',
    inputs: [
      { subject: 'shop.orders', fields: ['amount', 'currency'], usage: 'USAGE_KIND_FEATURE' },
      { dataset: 'features.customer_ltv', usage: 'USAGE_KIND_PASSTHROUGH' },
    ],
  },
  { name: 'features.customer_ltv', inputs: [{ subject: 'shop.orders', fields: ['customer_id', 'amount'], usage: 'USAGE_KIND_JOIN_KEY' }], produces: ['features.customer_ltv'] },
  { name: 'unrelated', inputs: [{ subject: 'bank.feed' }], produces: ['features.customer_ltv'] },
];

describe('buildGraph', () => {
  it('layers consumers after everything they read, numbered in rerun order', () => {
    const g = buildGraph('shop.orders', affected, consumers, ['features.customer_ltv', 'dash.daily_revenue']);
    const byId = Object.fromEntries(g.nodes.map((n) => [n.id, n]));
    expect(byId['shop.orders']).toMatchObject({ layer: 0, kind: 'subject' });
    expect(byId['features.customer_ltv']).toMatchObject({ layer: 1, order: 1, owner: 'team-ml' });
    // dash reads shop.orders directly and the ltv dataset: it comes after ltv.
    expect(byId['dash.daily_revenue']).toMatchObject({ layer: 2, order: 2 });
    expect(g.layers).toBe(3);
    expect(g.cycle).toBeUndefined();
    // A producer outside the blast radius adds no edge.
    expect(g.nodes.map((n) => n.id)).not.toContain('unrelated');
    expect(g.edges).toEqual([
      { from: 'shop.orders', to: 'dash.daily_revenue', label: 'amount, currency', usage: 'USAGE_KIND_FEATURE' },
      { from: 'features.customer_ltv', to: 'dash.daily_revenue', label: 'features.customer_ltv', usage: 'USAGE_KIND_PASSTHROUGH' },
      { from: 'shop.orders', to: 'features.customer_ltv', label: 'customer_id, amount', usage: 'USAGE_KIND_JOIN_KEY' },
    ]);
  });

  it('falls back to the blast radius path when the consumer list does not explain an edge', () => {
    const g = buildGraph('shop.orders', [{ consumer: 'x', path: ['shop.orders.id', 'x'], fields: ['id'] }], [], ['x']);
    expect(g.edges).toEqual([{ from: 'shop.orders', to: 'x', label: 'id' }]);
    expect(g.nodes[1]).toMatchObject({ id: 'x', layer: 1, order: 1 });
  });

  it('ends on a cycle and names it', () => {
    const cyc: Consumer[] = [
      { name: 'a', inputs: [{ subject: 's' }, { dataset: 'db' }], produces: ['da'] },
      { name: 'b', inputs: [{ dataset: 'da' }], produces: ['db'] },
    ];
    const g = buildGraph('s', [{ consumer: 'a' }, { consumer: 'b' }], cyc, []);
    expect(g.cycle).toBeDefined();
    expect(g.layers).toBeLessThanOrEqual(4);
  });
});
