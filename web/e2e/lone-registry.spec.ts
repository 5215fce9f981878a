// The console is served by every process that serves REST. A registry run
// on its own serves it too, and the console shows only what that process
// can answer: no quarantine, no identifiers, no partitions.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from '@playwright/test';
import { tokens } from './helpers';

let child: ChildProcess | undefined;
let url = '';
let dir = '';

function freePort(): Promise<number> {
  return new Promise((ok) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => ok(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

test.beforeAll(async () => {
  const shared = process.env.SEAM_E2E_DIR!;
  dir = mkdtempSync(join(tmpdir(), 'seam-console-registry-'));
  const http = `127.0.0.1:${await freePort()}`;
  url = `http://${http}`;
  child = spawn(
    process.env.SEAM_E2E_BIN!,
    // Its only peer is idmap (migration checks), here the drilled seam up's.
    ['registry', 'serve', '--data-dir', dir, '--tokens-file', join(shared, 'tokens.json'), '--service-token', join(shared, 'service.token'),
      '--idmap-addr', process.env.SEAM_E2E_GRPC!, '--grpc-addr', `127.0.0.1:${await freePort()}`, '--http-addr', http, '--log-level', 'warn'],
    { stdio: 'inherit' },
  );
  for (let i = 0; i < 150; i++) {
    if (child.exitCode !== null) throw new Error(`seam registry serve exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/readyz`)).ok) break;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const post = async (path: string, body: unknown) => {
    const r = await fetch(url + path, { method: 'POST', headers: { Authorization: `Bearer ${tokens.admin()}` }, body: JSON.stringify(body) });
    expect(r.status, await r.text()).toBe(200);
  };
  await post('/v1/contracts', {
    contract: {
      subject: 'bank.transfers',
      owner: 'team-treasury',
      notice_period: '168h',
      fields: [{ name: 'transfer_id', type: 'FIELD_TYPE_STRING', required: true, key: true }],
    },
  });
});

test.afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    await new Promise((r) => child!.once('exit', r));
  }
  rmSync(dir, { recursive: true, force: true });
});

test('a lone registry serves the console and shows only what it can answer', async ({ page }) => {
  await page.goto(`${url}/ui/`);
  await page.getByLabel('Token').fill(tokens.viewer());
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByTestId('role')).toHaveText('viewer');
  const nav = page.getByRole('navigation', { name: 'Console' });
  await expect(nav.getByRole('link')).toHaveText(['Sources', 'Alerts and events']);
  const row = page.getByTestId('sources-table').locator('tr[data-subject="bank.transfers"]');
  await expect(row).toContainText('v1');
  await row.getByRole('link', { name: 'bank.transfers' }).click();
  await expect(page.getByRole('navigation', { name: 'Views of this source' }).getByRole('link')).toHaveText(['Versions & audit', 'Diff', 'Blast radius']);
  await expect(page.getByTestId('versions-table')).toContainText('ACTIVE');
  await expect(page.getByRole('button', { name: /Contain/ })).toHaveCount(0);
});
