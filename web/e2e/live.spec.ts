// The console for the engineer on call (issue 35): every page follows the
// tab's one event stream, alerts are acknowledged and resolved from the
// console and the CLI alike, and every page fits a phone. Each test runs at
// 1440×900 and at 390×844 against the real `seam up` of the global setup,
// on a source of its own (live.payments) so it needs nothing from the
// other specs.
import { spawnSync } from 'node:child_process';
import { expect, test, type Browser, type Page } from '@playwright/test';
import { api, base, shot, signIn, tokens, watchErrors, watchOrigins } from './helpers';

const SUBJECT = 'live.payments';
const VIEWPORTS = [
  { name: 'desktop', width: 1440, height: 900 },
  { name: 'phone', width: 390, height: 844 },
] as const;

test.describe.configure({ mode: 'serial' });

// What every page of a test (the test's own and those it opens) asked of
// another origin, and the errors it showed.
let foreign: string[][] = [];
let errors: string[][] = [];
function watch(page: Page): void {
  foreign.push(watchOrigins(page));
  errors.push(watchErrors(page));
}
test.beforeEach(({ page }) => {
  foreign = [];
  errors = [];
  watch(page);
});
test.afterEach(() => {
  expect(foreign.flat(), 'requests to another origin').toEqual([]);
  expect(errors.flat(), 'errors in the page').toEqual([]);
});

const field = (name: string, type: string, extra: Record<string, unknown> = {}) => ({ name, type: `FIELD_TYPE_${type}`, required: true, ...extra });
const rec = (p: string, i: number, account?: string) => ({ payment_id: `P-${p}-${i}`, ...(account === undefined ? {} : { account }), amount: 5 + i });

async function send(partition: string, batch: string, records: unknown[], seal = false): Promise<{ partition?: { verdict?: string } }> {
  return api(tokens.admin(), 'POST', `/v1/subjects/${SUBJECT}:ingest`, {
    partition,
    batch_id: batch,
    summary_only: true,
    seal,
    batch: { objects: { records } },
  });
}

const good = (p: string) => [...Array(12)].map((_, i) => rec(p, i, `ACC-${String(i).padStart(6, '0')}`));

test.beforeAll(async () => {
  const admin = tokens.admin();
  await api(admin, 'POST', '/v1/canonical-models', {
    model: { name: 'treasury.payment', owner: 'team-payments', fields: [field('payment_id', 'STRING', { key: true }), field('account', 'STRING'), field('amount', 'DOUBLE')] },
  });
  await api(admin, 'POST', '/v1/contracts', {
    contract: {
      subject: SUBJECT,
      owner: 'team-payments',
      compatibility: 'COMPATIBILITY_BACKWARD',
      notice_period: '168h',
      fields: [field('payment_id', 'STRING', { key: true }), field('account', 'STRING'), field('amount', 'DOUBLE', { min: 0 })],
      checks: [{ name: 'account_present', rule: 'required(account)', policy: 'POLICY_BLOCK' }],
      mapping: { canonical: 'treasury.payment', fields: { payment_id: { from: 'payment_id' }, account: { from: 'account' }, amount: { from: 'amount' } } },
    },
  });
  for (const d of ['2026-11-01', '2026-11-02']) {
    const r = await send(d, `good-${d}`, good(d), true);
    expect(r.partition?.verdict).toBe('PARTITION_VERDICT_PASSED');
  }
});

/** cli runs the seam binary against the test's Seam with a token. */
function cli(token: string, ...args: string[]): string {
  const r = spawnSync(process.env.SEAM_E2E_BIN!, [...args, '--addr', process.env.SEAM_E2E_GRPC!, '--token', token], { encoding: 'utf8', timeout: 30_000 });
  if (r.status !== 0) throw new Error(`seam ${args.join(' ')}: ${r.status}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

interface Alert {
  sequence: string;
  partition: string;
  kind: string;
  state: string;
  acknowledged_by?: string;
  resolved_by?: string;
  resolution?: string;
}

async function alertsOf(partition: string): Promise<Alert[]> {
  const r = await api<{ alerts?: Alert[] }>(tokens.admin(), 'GET', `/v1/alerts?subject=${SUBJECT}`);
  return (r.alerts ?? []).filter((a) => a.partition === partition);
}

async function openPage(browser: Browser, vp: { width: number; height: number }, token: string, role: string, path: string): Promise<Page> {
  const ctx = await browser.newContext({ viewport: { width: vp.width, height: vp.height } });
  const page = await ctx.newPage();
  watch(page);
  await signIn(page, token, role);
  await page.goto(`${base()}/ui/${path}`);
  await expect(page.getByTestId('live')).toHaveAttribute('data-status', 'live');
  return page;
}

/**
 * widthOf is how wide the page's document is, the viewport, and the
 * outermost elements reaching past it (to say what to fix).
 */
async function widthOf(page: Page): Promise<{ doc: number; view: number; culprits: string[] }> {
  return page.evaluate(() => {
    const view = window.innerWidth;
    const culprits: string[] = [];
    const walk = (el: Element) => {
      const r = el.getBoundingClientRect();
      if (r.right > view + 0.5 && r.width > 0) {
        culprits.push(`${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}${el.className && typeof el.className === 'string' ? `.${el.className.split(' ').join('.')}` : ''} right=${Math.round(r.right)}`);
        return;
      }
      // An element that scrolls its overflow keeps it inside.
      const st = getComputedStyle(el);
      if (st.overflowX === 'auto' || st.overflowX === 'scroll' || st.overflowX === 'hidden') return;
      for (const c of Array.from(el.children)) walk(c);
    };
    walk(document.body);
    return { doc: document.documentElement.scrollWidth, view, culprits: culprits.slice(0, 5) };
  });
}

for (const vp of VIEWPORTS) {
  test.describe(`at ${vp.width}×${vp.height}`, () => {
    test.use({ viewport: { width: vp.width, height: vp.height } });
    // Each viewport seals a BLOCKED day of its own.
    const blocked = vp.name === 'desktop' ? '2026-11-03' : '2026-11-05';
    const cliDay = vp.name === 'desktop' ? '2026-11-04' : '2026-11-06';

    test('a partition sealed BLOCKED shows on Sources, the source and Alerts within 10 s, without a reload', async ({ page, browser }, info) => {
      await signIn(page, tokens.viewer(), 'viewer');
      await expect(page.getByTestId('live')).toHaveAttribute('data-status', 'live');
      const sourcePage = await openPage(browser, vp, tokens.viewer(), 'viewer', `sources/${SUBJECT}`);
      const alertsPage = await openPage(browser, vp, tokens.viewer(), 'viewer', `alerts?subject=${SUBJECT}`);
      const incidentPage = await openPage(browser, vp, tokens.viewer(), 'viewer', `incident/${SUBJECT}`);
      await expect(incidentPage.getByText(/^Loading/)).toHaveCount(0);
      const row = page.getByTestId('sources-table').locator(`tr[data-subject="${SUBJECT}"]`);
      await expect(row.getByTestId('latest-partition')).not.toHaveText(blocked);
      const pages = [page, sourcePage, alertsPage, incidentPage];
      const loads = await Promise.all(pages.map((p) => p.evaluate(() => performance.timeOrigin)));

      // The day arrives with records missing the account, and is sealed.
      const t0 = Date.now();
      await send(blocked, `bad-${blocked}`, [...good(blocked), rec(blocked, 90), rec(blocked, 91)]);
      const sealed = await api<{ partition: { verdict: string } }>(tokens.admin(), 'POST', `/v1/subjects/${SUBJECT}/partitions/${blocked}:seal`, {});
      expect(sealed.partition.verdict).toBe('PARTITION_VERDICT_BLOCKED');
      const left = () => Math.max(1, 10_000 - (Date.now() - t0));

      await expect(row.getByTestId('latest-partition')).toHaveText(blocked, { timeout: left() });
      await expect(row.getByTestId('verdict')).toHaveText('BLOCKED', { timeout: left() });
      await expect(row.getByTestId('open-alerts')).toContainText('critical', { timeout: left() });
      const onSources = Date.now() - t0;
      await expect(sourcePage.getByTestId('partitions-table').locator(`tr[data-partition="${blocked}"]`)).toContainText('BLOCKED', { timeout: left() });
      // The banner the source page leads with names the day too.
      await expect(sourcePage.getByTestId('current-incident')).toHaveAttribute('data-partition', blocked, { timeout: left() });
      const onSource = Date.now() - t0;
      const blockedAlert = alertsPage.getByTestId('alerts-table').locator('tbody tr').filter({ hasText: 'PARTITION_BLOCKED' }).filter({ hasText: blocked });
      await expect(blockedAlert).toHaveCount(1, { timeout: left() });
      const onAlerts = Date.now() - t0;
      // The incident page's window reaches the day, as the gate stands it.
      await expect(incidentPage.getByTestId('incident-window').locator('tr').filter({ hasText: blocked })).toContainText('BLOCKED', { timeout: left() });
      const onIncident = Date.now() - t0;
      console.log(
        `${vp.name}: sealed BLOCKED shown on Sources after ${onSources} ms, the source after ${onSource} ms, Alerts after ${onAlerts} ms, the incident page after ${onIncident} ms`,
      );
      expect(Math.max(onSources, onSource, onAlerts, onIncident)).toBeLessThan(10_000);

      // None of the pages was reloaded.
      expect(await Promise.all(pages.map((p) => p.evaluate(() => performance.timeOrigin)))).toEqual(loads);

      if (vp.name === 'desktop') await shot(page, info, 'live-sources');
      else await shot(sourcePage, info, 'phone-live-source');
      await sourcePage.context().close();
      await alertsPage.context().close();
      await incidentPage.context().close();
    });

    test('acknowledge and resolve from the console show in seam alerts list; the CLI’s show in the console', async ({ page, browser }, info) => {
      const [alert] = (await alertsOf(blocked)).filter((a) => a.kind === 'PARTITION_BLOCKED');
      expect(alert, `the PARTITION_BLOCKED alert of ${blocked}`).toBeTruthy();

      // A viewer sees the alert and no button.
      const viewer = await openPage(browser, vp, tokens.viewer(), 'viewer', `alerts?subject=${SUBJECT}`);
      const viewerRow = viewer.locator(`tr[data-alert="${alert.sequence}"]`);
      await expect(viewerRow).toBeVisible();
      await expect(viewerRow.getByRole('button')).toHaveCount(0);

      await signIn(page, tokens.operator(), 'operator');
      await page.goto(`${base()}/ui/alerts?subject=${SUBJECT}&state=holding`);
      const row = page.locator(`tr[data-alert="${alert.sequence}"]`);
      await expect(row.getByTestId('alert-state')).toContainText('open');
      await row.getByRole('button', { name: 'Acknowledge…' }).click();
      let dialog = page.getByRole('dialog');
      await dialog.getByLabel('Reason').fill('paging the payments team');
      await dialog.getByRole('button', { name: 'Acknowledge', exact: true }).click();
      await expect(row.getByTestId('acked')).toContainText('acknowledged by otto');
      await expect(row.getByTestId('acked')).toContainText('paging the payments team');
      const acked = (JSON.parse(cli(tokens.admin(), 'alerts', 'list', SUBJECT, '--state', 'acknowledged', '-o', 'json')) as { alerts?: Alert[] }).alerts ?? [];
      expect(acked.find((a) => String(a.sequence) === String(alert.sequence))).toMatchObject({ state: 'ALERT_STATE_ACKNOWLEDGED', acknowledged_by: 'otto' });

      await row.getByRole('button', { name: 'Resolve…' }).click();
      dialog = page.getByRole('dialog');
      await dialog.getByLabel('Reason').fill(`resent ${blocked} with the accounts`);
      await dialog.getByRole('button', { name: 'Resolve', exact: true }).click();
      // Resolved, it leaves the "open or acknowledged" view; under "all" it says by whom and why.
      await expect(row).toHaveCount(0);
      const listed = JSON.parse(cli(tokens.admin(), 'alerts', 'list', SUBJECT, '--all', '-o', 'json')) as { alerts: Alert[] };
      const after = listed.alerts.find((a) => String(a.sequence) === String(alert.sequence))!;
      expect(after).toMatchObject({ state: 'ALERT_STATE_RESOLVED', acknowledged_by: 'otto', resolved_by: 'otto', resolution: `resent ${blocked} with the accounts` });
      await page.getByTestId('state-filter').selectOption('all');
      await expect(row.getByTestId('resolved')).toContainText('resolved by otto');
      await expect(row.getByTestId('resolved')).toContainText(`resent ${blocked} with the accounts`);
      // The viewer's page followed without a reload.
      await expect(viewerRow.getByTestId('alert-state')).toContainText('resolved', { timeout: 10_000 });
      await expect(viewerRow.getByTestId('resolved')).toContainText('otto');

      // Another BLOCKED day, acknowledged and resolved with the CLI, shows in the console as it happens.
      await send(cliDay, `bad-${cliDay}`, [...good(cliDay), rec(cliDay, 90)], true);
      const [other] = (await alertsOf(cliDay)).filter((a) => a.kind === 'PARTITION_BLOCKED');
      const otherRow = page.locator(`tr[data-alert="${other.sequence}"]`);
      await expect(otherRow.getByTestId('alert-state')).toContainText('open', { timeout: 10_000 });
      cli(tokens.operator(), 'alerts', 'ack', String(other.sequence), '--reason', 'on it from the terminal');
      await expect(otherRow.getByTestId('acked')).toContainText('acknowledged by otto', { timeout: 10_000 });
      await expect(otherRow.getByTestId('acked')).toContainText('on it from the terminal');
      await expect(otherRow.getByRole('button', { name: 'Acknowledge…' })).toHaveCount(0);
      if (vp.name === 'desktop') await shot(page, info, 'alerts-acted');
      cli(tokens.operator(), 'alerts', 'resolve', String(other.sequence), '--reason', 'resent from the terminal');
      await expect(otherRow.getByTestId('resolved')).toContainText('resent from the terminal', { timeout: 10_000 });
      await expect(otherRow.getByRole('button')).toHaveCount(0);

      // Filters: by state, severity and kind.
      await page.getByTestId('state-filter').selectOption('resolved');
      await expect(page.locator('tbody tr[data-state]').filter({ hasNotText: 'resolved' })).toHaveCount(0);
      await page.getByLabel('Kind').selectOption('PARTITION_BLOCKED');
      await page.getByLabel('Severity').selectOption('SEVERITY_CRITICAL');
      await expect(page.locator(`tr[data-alert="${other.sequence}"]`)).toBeVisible();
      await page.getByLabel('Severity').selectOption('SEVERITY_WARNING');
      await expect(page.locator(`tr[data-alert="${other.sequence}"]`)).toHaveCount(0);
      await viewer.context().close();
    });

    test('no page is wider than the viewport, and the header fits', async ({ page }, info) => {
      await signIn(page, tokens.admin(), 'admin');
      const q = await api<{ records?: { id: string }[] }>(tokens.admin(), 'POST', '/v1/quarantine:list', { filter: {}, page_size: 1 });
      const pages = [
        '',
        `sources/${SUBJECT}`,
        'sources/shop.orders',
        'sources/shop.orders?tab=versions',
        'sources/shop.orders?tab=diff',
        'sources/shop.orders?tab=lineage',
        'quarantine',
        'quarantine?subject=shop.orders',
        ...(q.records?.length ? [`quarantine/${q.records[0].id}`] : []),
        'alerts',
        'identifiers',
      ];
      // The incident pages, and the partition pages of the newest and the
      // drill's day 8 (backfilled, amended) of each source that has them:
      // the lists of partitions and incidents depend on the tests run before.
      for (const subject of [SUBJECT, 'shop.orders', 'pay.settlements']) {
        const parts = await api<{ partitions?: { partition: string }[] }>(tokens.admin(), 'GET', `/v1/subjects/${subject}/monitor`).then(
          (r) => (r.partitions ?? []).map((x) => x.partition),
          () => [] as string[],
        );
        if (parts.length === 0) continue;
        pages.push(`incident/${subject}`, `partition/${subject}/${parts[parts.length - 1]}`);
        if (parts.includes('2026-03-08') && parts[parts.length - 1] !== '2026-03-08') pages.push(`partition/${subject}/2026-03-08`);
      }
      const wide: string[] = [];
      const measured: string[] = [];
      for (const path of pages) {
        await page.goto(`${base()}/ui/${path}`);
        await expect(page.locator('main h1')).toBeVisible();
        await expect(page.getByText(/^Loading/)).toHaveCount(0);
        await page.waitForTimeout(300);
        const w = await widthOf(page);
        measured.push(`/ui/${path} ${w.doc}`);
        if (w.doc > w.view) wide.push(`/ui/${path}: ${w.doc} px in ${w.view} px (${w.culprits.join(', ')})`);
        // The header keeps its text on the dark bar: nothing overflows it.
        const header = await page.locator('header.top').evaluate((h) => ({ scroll: h.scrollWidth, client: h.clientWidth, height: h.getBoundingClientRect().height }));
        if (header.scroll > header.client) wide.push(`/ui/${path}: header ${header.scroll} px in ${header.client} px`);
        expect(header.height, `header height on /ui/${path}`).toBeLessThan(vp.width < 500 ? 110 : 60);
        if (vp.name === 'phone' && (path === '' || path === 'alerts' || path === 'sources/shop.orders')) {
          await shot(page, info, `phone-${path === '' ? 'sources' : path.replace(/[/?=.]+/g, '-')}`);
        }
      }
      console.log(`${vp.name}: document width in a ${vp.width} px viewport: ${measured.join(', ')}`);
      expect(wide, 'pages wider than the viewport').toEqual([]);
      // The sparkline is a chart: taller than a hairline, a marker per
      // partition with a match rate among the last 14.
      await page.goto(`${base()}/ui/`);
      const spark = page.getByTestId('sources-table').locator('tr[data-subject="shop.orders"]').getByTestId('sparkline');
      const box = await spark.boundingBox();
      expect(box!.height).toBeGreaterThanOrEqual(36);
      expect(box!.x + box!.width).toBeLessThanOrEqual(vp.width);
      const parts = (await api<{ partitions: { match_rate?: number }[] }>(tokens.admin(), 'GET', '/v1/subjects/shop.orders/monitor')).partitions.slice(-14);
      await expect(spark.locator('circle')).toHaveCount(parts.filter((p) => Number(p.match_rate ?? -1) >= 0).length);
    });
  });
}
