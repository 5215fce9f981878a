// The engineer on call, from the console: a source's incident planned and
// fixed from its page (the same plan and the same release as `seam
// incident --apply`), the source page leading with what is wrong now, a
// partition's checks and amendments, and a blocked day resent from a file.
// At 1440×900 and at 390×844, where no page is wider than the phone.
import { expect, test, type Page } from '@playwright/test';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { api, base, guardPages, n, shot, signIn, tokens } from './helpers';

const PAY = 'pay.settlements';
const DAY7 = '2026-03-07';
const DAY8 = '2026-03-08';
const ORDERS = 'shop.orders';
const DAY11 = '2026-03-11';

const WIDE = { width: 1440, height: 900 };
const PHONE = { width: 390, height: 844 };

test.describe.configure({ mode: 'serial' });

guardPages();

const dir = mkdtempSync(join(tmpdir(), 'seam-incident-e2e-'));
const file = (name: string, text: string): string => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

/** seam runs the seam command against the Seam under test as its admin. */
function seam(...args: string[]): { out: string; code: number } {
  const r = spawnSync(process.env.SEAM_E2E_BIN!, [...args, '--addr', process.env.SEAM_E2E_GRPC!, '--token', tokens.admin()], { encoding: 'utf8', timeout: 120_000 });
  return { out: `${r.stdout}${r.stderr}`, code: r.status ?? -1 };
}

function mustSeam(...args: string[]): string {
  const r = seam(...args);
  if (r.code !== 0) throw new Error(`seam ${args.join(' ')} exited ${r.code}:\n${r.out}`);
  return r.out;
}

/** openWide signs in as role on a wide screen and opens the console's path. */
async function openWide(page: Page, role: 'admin' | 'viewer', path: string): Promise<void> {
  await page.setViewportSize(WIDE);
  await signIn(page, tokens[role](), role);
  await page.goto(`${base()}/ui/${path}`);
}

/**
 * widthFits says the page's content is no wider than the viewport: no
 * element of <main> reaches past its right edge, and <main> scrolls
 * nothing sideways. (The header is the shell's, fitted to phones apart.)
 * root narrows it to a part of a page.
 */
async function widthFits(page: Page, root = 'main'): Promise<void> {
  const { wide, scroll, view } = await page.evaluate((root) => {
    const view = window.innerWidth;
    const main = document.querySelector(root)!;
    const wide: string[] = [];
    for (const el of Array.from(main.querySelectorAll('*'))) {
      // What scrolls inside its own frame is within the page.
      if (el.closest('.frame') && !el.classList.contains('frame')) continue;
      const r = el.getBoundingClientRect();
      if (r.right > view + 0.5 && wide.length < 8) wide.push(`${el.tagName.toLowerCase()}.${el.className} ${Math.round(r.right)}`);
    }
    return { wide, scroll: main.getBoundingClientRect().left + main.scrollWidth, view };
  }, root);
  expect(wide, `elements wider than ${view} px`).toEqual([]);
  expect(scroll, `the page's width at ${view} px`).toBeLessThanOrEqual(view);
}

// pay.settlements, our own source: merchant ids are integers of the
// merchant master until day 8, when they arrive as random UUIDs that only
// the source's one-time sync (a pairs file, missing 20 merchants) maps.
const uuids = Array.from({ length: 200 }, () => randomUUID());
const pairsCSV = `uuid,legacy_int\n${uuids
  .slice(0, 180)
  .map((u, i) => `${u},${1000 + i}`)
  .join('\n')}\n`;
let cliPlan: {
  steps: { name: string }[];
  window: string[];
  window_held: number;
  replay_id: string;
  dry_run: { records: number; passed: number };
};

test.beforeAll(() => {
  mustSeam('idmap', 'namespace', 'create', 'merchant', '--format', 'legacy-int:int');
  const known = Array.from({ length: 5000 }, (_, i) => `${1000 + i}`).join('\n');
  mustSeam('idmap', 'import', 'merchant', file('known.csv', `${known}\n`), '--members', 'legacy-int', '--no-header');
  mustSeam(
    'canonical',
    'register',
    '-f',
    file(
      'model.yaml',
      `name: payments.settlement
owner: team-data
fields:
  - {name: settlement_id, type: STRING, required: true, key: true}
  - {name: merchant_id, type: INT64, required: true, identifier: {namespace: merchant, format: legacy-int}}
  - {name: amount, type: DOUBLE, required: true}
  - {name: settled_at, type: TIMESTAMP, required: true}
`,
    ),
  );
  mustSeam(
    'contract',
    'register',
    '-f',
    file(
      'v1.yaml',
      `subject: ${PAY}
owner: team-payments
compatibility: BACKWARD
notice_period: 14d
fields:
  - {name: settlement_id, type: STRING, required: true, key: true, pattern: "^SET-[0-9]{8}$"}
  - {name: merchant_id, type: INT64, required: true, identifier: {namespace: merchant, format: legacy-int}}
  - {name: amount, type: DOUBLE, required: true, min: 0}
  - {name: settled_at, type: TIMESTAMP, required: true}
checks:
  - {name: merchant_match, rule: "match_rate(merchant_id, min: 0.9)", policy: ALERT}
mapping:
  canonical: payments.settlement
  fields:
    settlement_id: {from: settlement_id}
    merchant_id: {from: merchant_id}
    amount: {from: amount}
    settled_at: {from: settled_at}
`,
    ),
  );
  mustSeam(
    'consumer',
    'register',
    '-f',
    file(
      'payouts.yaml',
      `name: finance.merchant_payouts
owner: team-finance
inputs:
  - {canonical: payments.settlement, fields: [merchant_id], usage: JOIN_KEY}
`,
    ),
  );
  const day = (d: number, count: number, merchant: (i: number) => string) =>
    Array.from(
      { length: count },
      (_, i) => `{"settlement_id":"SET-${String(d * 10000 + i).padStart(8, '0')}","merchant_id":${merchant(i)},"amount":${10 + i}.25,"settled_at":"2026-03-${String(d).padStart(2, '0')}T10:${String(i % 60).padStart(2, '0')}:00Z"}`,
    ).join('\n') + '\n';
  mustSeam('gate', 'ingest', PAY, file('day7.ndjson', day(7, 50, (i) => String(1000 + i))), '--partition', DAY7);
  seam('gate', 'ingest', PAY, file('day8.ndjson', day(8, 200, (i) => JSON.stringify(uuids[i]))), '--partition', DAY8);
  // What the command plans with the source's pairs: what the page must show and release.
  cliPlan = JSON.parse(mustSeam('incident', PAY, '--pairs', file('merchants.csv', pairsCSV), '-o', 'json'));
});

test('the incident page shows the plan of seam incident, and a viewer cannot apply it', async ({ page }) => {
  const plain = JSON.parse(mustSeam('incident', PAY, '-o', 'json')) as { steps: { name: string }[]; held: number; since: string };
  await openWide(page, 'viewer', `incident/${PAY}`);
  await expect(page.getByTestId('incident-summary')).toContainText(`${plain.held} records held since partition ${plain.since}`);
  expect(plain.since).toBe(DAY8);
  await expect(page.getByTestId('what-changed')).toContainText('UNANNOUNCED_CHANGE');
  await expect(page.getByTestId('incident-radius')).toContainText('finance.merchant_payouts');
  await expect(page.getByTestId('incident-migrations')).toContainText('only a lookup table will do');
  await expect(page.getByTestId('incident-steps').locator(':scope > li strong')).toHaveText(plain.steps.map((s) => s.name));
  await expect(page.getByTestId('apply-needs-role')).toBeVisible();
  await expect(page.getByTestId('apply-form')).toHaveCount(0);
  await page.setViewportSize(PHONE);
  await widthFits(page);
});

test('the incident page applies the fix and releases exactly what seam incident --apply would', async ({ page }, info) => {
  await openWide(page, 'admin', `incident/${PAY}`);
  await expect(page.getByTestId('incident-migrations')).toContainText('only a lookup table will do');
  // The source's pairs, uploaded as --pairs gives them: the plan and its
  // dry run are redone with them, the command's own.
  await page.getByTestId('pairs-form').locator('input[type=file]').setInputFiles({ name: 'merchants.csv', mimeType: 'text/csv', buffer: Buffer.from(pairsCSV) });
  await expect(page.getByTestId('incident-dry-run')).toContainText(`${cliPlan.dry_run.passed} would be released`);
  expect(cliPlan.dry_run.passed).toBe(180);
  await expect(page.getByTestId('incident-steps').first().locator(':scope > li strong')).toHaveText(cliPlan.steps.map((s) => s.name));
  await expect(page.getByTestId('incident-migrations')).toContainText('a lookup table of the 180 pairs of merchants.csv');
  await shot(page, info, 'incident-plan');

  // A reason is required.
  const form = page.getByTestId('apply-form');
  await form.getByRole('button', { name: /^Apply/ }).click();
  await expect(form.getByRole('alert')).toContainText('A reason is required');
  await form.getByLabel('Reason').fill('INC-2: merchants arrive as UUIDs');
  await form.getByRole('button', { name: /^Apply/ }).click();

  const outcome = page.getByTestId('incident-outcome');
  await expect(outcome.getByTestId('reconciliation')).toContainText(
    `held before ${cliPlan.window_held} = released ${cliPlan.dry_run.passed} + still held ${cliPlan.window_held - cliPlan.dry_run.passed}`,
    { timeout: 60_000 },
  );
  await expect(outcome.getByTestId('reconciliation')).toContainText('adds up');
  await expect(outcome.locator('[data-state=done]')).toHaveCount(cliPlan.steps.length);
  await expect(outcome).toContainText('finance.merchant_payouts');

  // The gate agrees: the window's records released are the ones the
  // command's dry run named, the rest still held, under the command's replay id.
  const stats = (state: string) =>
    api<{ total?: string }>(tokens.admin(), 'POST', '/v1/quarantine:stats', { filter: { subject: PAY, partition_from: DAY8, partition_to: DAY8, state } });
  expect(n((await stats('QUARANTINE_STATE_RELEASED')).total)).toBe(cliPlan.dry_run.passed);
  expect(n((await stats('QUARANTINE_STATE_HELD')).total)).toBe(cliPlan.window_held - cliPlan.dry_run.passed);
  const events = await api<{ events?: { type: string; attributes?: Record<string, string>; message?: string }[] }>(
    tokens.admin(),
    'GET',
    `/v1/events?subjects=${PAY}&types=EVENT_TYPE_BACKFILL_COMPLETED`,
  );
  expect(JSON.stringify(events.events ?? [])).toContain(cliPlan.replay_id);
  // And the command finds nothing left to fix: no new version, nothing a replay would release.
  const after = JSON.parse(mustSeam('incident', PAY, '--pairs', join(dir, 'merchants.csv'), '-o', 'json')) as { steps: unknown[] | null; held: number };
  expect(after.steps ?? []).toEqual([]);
  expect(after.held).toBe(cliPlan.window_held - cliPlan.dry_run.passed);
  await page.evaluate(() => window.scrollTo(0, 0));
  await shot(page, info, 'incident-applied');
  await page.setViewportSize(PHONE);
  await widthFits(page);
  await shot(page, info, 'incident-phone');
});

// shop.orders after the drill: day 8 broke and was backfilled. Day 11
// arrives with a fifth of its orders lacking customer_id: BLOCKED.
interface Order {
  order_id: string;
  customer_id?: string;
  amount: number;
  currency: string;
  status: string;
  created_at: string;
  items: number;
}
let orders: Order[] = [];

async function day11(blocked: boolean): Promise<string> {
  if (orders.length === 0) {
    // Customers the table maps, read off day 8's released records, and
    // amounts around day 10's mean, so the corrected day passes whole.
    const r = await api<{ records?: { raw?: string }[] }>(tokens.admin(), 'POST', '/v1/quarantine:list', {
      filter: { subject: ORDERS, state: 'QUARANTINE_STATE_RELEASED' },
      page_size: 200,
    });
    const customers = (r.records ?? []).map((x) => JSON.parse(Buffer.from(x.raw ?? '', 'base64').toString()).customer_id as string);
    expect(customers.length).toBeGreaterThan(10);
    const mon = await api<{ partitions: { partition: string; fields?: { field: string; mean?: number }[] }[] }>(
      tokens.admin(),
      'GET',
      `/v1/subjects/${ORDERS}/monitor`,
    );
    const mean = mon.partitions.find((p) => p.partition === '2026-03-10')?.fields?.find((f) => f.field === 'amount')?.mean ?? 85;
    orders = Array.from({ length: 400 }, (_, i) => ({
      order_id: `ORD-${String(9_000_000_000 + i).padStart(10, '0')}`,
      customer_id: customers[i % customers.length],
      amount: Math.round(mean * (0.9 + (i % 21) / 100) * 100) / 100,
      currency: 'EUR',
      status: 'paid',
      created_at: `${DAY11}T${String(i % 24).padStart(2, '0')}:00:00Z`,
      items: 1 + (i % 3),
    }));
  }
  return (
    orders
      .map((o, i) => {
        if (!blocked || i % 5 !== 0) return JSON.stringify(o);
        const { customer_id: _, ...rest } = o;
        return JSON.stringify(rest);
      })
      .join('\n') + '\n'
  );
}

test('the source page leads with the BLOCKED day, and its partition page says which check decided it', async ({ page }, info) => {
  const admin = tokens.admin();
  const sent = await api<{ partition?: { verdict?: string } }>(admin, 'POST', `/v1/subjects/${ORDERS}:ingest`, {
    partition: DAY11,
    batch_id: 'day11',
    summary_only: true,
    seal: true,
    batch: { raw: { format: 'FORMAT_NDJSON', data: Buffer.from(await day11(true)).toString('base64') } },
  });
  expect(sent.partition?.verdict).toMatch(/BLOCKED$/);

  await openWide(page, 'viewer', `sources/${ORDERS}`);
  const now = page.getByTestId('current-incident');
  await expect(now).toHaveAttribute('data-partition', DAY11);
  await expect(now).toContainText(`Partition ${DAY11} is BLOCKED`);
  // The plot's caption, too, names what is held back now, not day 8 before its backfill.
  await expect(page.getByTestId('counts-plot').locator('figcaption')).toContainText(`most held back now on ${DAY11}`);
  await shot(page, info, 'source-current-incident');
  await page.setViewportSize(PHONE);
  // The banner fits a phone (the source page's tables are the shell's).
  await widthFits(page, '[data-testid=current-incident]');
  await page.setViewportSize(WIDE);

  await now.getByRole('link', { name: DAY11 }).click();
  await expect(page.getByRole('heading', { name: `${ORDERS} partition ${DAY11}` })).toBeVisible();
  const state = (await api<{ partition: { checks: { check: string; policy: string; exceeded?: boolean; failures?: string; rows?: string }[] } }>(
    admin,
    'GET',
    `/v1/subjects/${ORDERS}/partitions/${DAY11}`,
  )).partition;
  const deciders = state.checks.filter((c) => c.policy === 'POLICY_BLOCK' && c.exceeded).map((c) => c.check);
  expect(deciders).toEqual(['customer_present']);
  await expect(page.getByTestId('decided-by')).toContainText('Decided by: customer_present');
  const row = page.getByTestId('checks-table').locator('tr[data-check="customer_present"]');
  await expect(row).toHaveAttribute('data-decided', 'yes');
  const cp = state.checks.find((c) => c.check === 'customer_present')!;
  await expect(row).toContainText(`${n(cp.failures)} of ${n(cp.rows)} failed (20%)`);
  await expect(row).toContainText('over threshold');
  await expect(row).toContainText('no failure allowed');
  // Every other check is listed with its outcome, and decided nothing.
  await expect(page.getByTestId('checks-table').locator('tr[data-decided=no]')).toHaveCount(state.checks.length - 1);
  // A viewer may not resend.
  await expect(page.getByTestId('resend-form')).toHaveCount(0);
  await page.setViewportSize(PHONE);
  await widthFits(page);
});

test('a partition page shows the baseline partitions, the resend and the replay of the drill', async ({ page }, info) => {
  // Day 6 was resent corrected; day 8 was replayed after the fix.
  await openWide(page, 'viewer', `partition/${ORDERS}/2026-03-06`);
  await expect(page.getByTestId('amendments')).toContainText('Sent 2 times');
  await page.goto(`${base()}/ui/partition/${ORDERS}/${DAY8}`);
  await expect(page.getByTestId('amendments')).toContainText('First sealed');
  await expect(page.getByTestId('amendments')).toContainText('Replay (event #');
  const st = (await api<{ partition: { checks: { check: string; baseline_partitions?: string[] }[] } }>(
    tokens.admin(),
    'GET',
    `/v1/subjects/${ORDERS}/partitions/${DAY8}`,
  )).partition;
  const withBase = st.checks.find((c) => (c.baseline_partitions ?? []).length > 0);
  expect(withBase, 'a check of day 8 with baseline partitions').toBeTruthy();
  const row = page.getByTestId('checks-table').locator(`tr[data-check="${withBase!.check}"]`);
  for (const p of withBase!.baseline_partitions!) await expect(row.getByRole('link', { name: p })).toBeVisible();
  await shot(page, info, 'partition');
  await page.setViewportSize(PHONE);
  await widthFits(page);
  await page.getByTestId('checks-table').scrollIntoViewIfNeeded();
  await shot(page, info, 'partition-phone');
});

test('a blocked day resent from a file in the console passes, and the source page moves on', async ({ page }, info) => {
  await openWide(page, 'admin', `partition/${ORDERS}/${DAY11}`);
  const form = page.getByTestId('resend-form');
  await expect(form).toContainText('This partition is BLOCKED');
  await form.locator('input[type=file]').setInputFiles({ name: 'orders-2026-03-11.ndjson', mimeType: 'application/x-ndjson', buffer: Buffer.from(await day11(false)) });
  await form.getByRole('button', { name: 'Resend…' }).click();
  await shot(page, info, 'partition-resend');
  await page.getByRole('dialog').getByRole('button', { name: 'Resend as replacement' }).click();
  await expect(page.getByTestId('resent')).toContainText('attempt 2, 400 records, now PASSED');
  const st = (await api<{ partition: { verdict: string; attempt: number } }>(tokens.admin(), 'GET', `/v1/subjects/${ORDERS}/partitions/${DAY11}`)).partition;
  expect(st.verdict).toBe('PARTITION_VERDICT_PASSED');
  expect(st.attempt).toBe(2);
  await expect(page.getByTestId('amendments')).toContainText('Sent 2 times');
  await page.goto(`${base()}/ui/sources/${ORDERS}`);
  await expect(page.getByTestId('current-incident')).not.toHaveAttribute('data-partition', DAY11);
});
