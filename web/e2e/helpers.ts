import { expect, test, type Page, type TestInfo } from '@playwright/test';
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const base = (): string => {
  const u = process.env.SEAM_URL;
  if (!u) throw new Error('SEAM_URL is not set: run the tests through playwright test, whose global setup starts Seam');
  return u;
};

export const tokens = {
  admin: () => process.env.SEAM_ADMIN_TOKEN!,
  operator: () => process.env.SEAM_OPERATOR_TOKEN!,
  viewer: () => process.env.SEAM_VIEWER_TOKEN!,
};

/** api calls Seam's REST API directly, as the tests' source of truth. */
export async function api<T>(token: string, method: string, path: string, body?: unknown): Promise<T> {
  const r = await fetch(base() + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${text}`);
  return JSON.parse(text) as T;
}

export const n = (v: unknown): number => (v === undefined || v === null ? 0 : Number(v));

/** pct renders a share as the console does. */
export const pct = (share: number): string => `${(share * 100).toFixed(1)}%`;

/** intText renders a count as the console does. */
export const intText = (v: number): string => v.toLocaleString('en-US');

export async function signIn(page: Page, token: string, role: string): Promise<void> {
  await page.goto(`${base()}/ui/`);
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByTestId('role')).toHaveText(role);
}

const docs = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs', 'console');

/**
 * shot saves a screenshot of the page: into docs/console (linked from
 * docs/console.md) when UPDATE_SCREENSHOTS=1, else beside the test's results.
 */
export async function shot(page: Page, info: TestInfo, name: string): Promise<void> {
  const path = process.env.UPDATE_SCREENSHOTS ? join(docs, `${name}.png`) : info.outputPath(`${name}.png`);
  mkdirSync(dirname(path), { recursive: true });
  // Let the plots settle and the countdowns tick to a whole second.
  await page.waitForTimeout(300);
  await page.screenshot({ path, fullPage: false, animations: 'disabled' });
}

/**
 * offOrigin collects every request the page makes to another origin: the
 * console must load nothing from anywhere but the Seam that served it.
 */
export function watchOrigins(page: Page): string[] {
  const foreign: string[] = [];
  const origin = new URL(base()).origin;
  page.on('request', (req) => {
    const url = req.url();
    if (url.startsWith('data:') || url.startsWith('blob:')) return;
    if (new URL(url).origin !== origin) foreign.push(url);
  });
  return foreign;
}

/**
 * watchErrors collects uncaught exceptions and console errors (a refused
 * Content-Security-Policy shows there), leaving out the browser's note on
 * a failed request, which the tests provoke on purpose (a wrong token).
 */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(`uncaught: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(`console: ${m.text()}`);
  });
  return errors;
}

/**
 * guardPages checks after each test of the file that its page asked no
 * other origin for anything and raised no error.
 */
export function guardPages(): void {
  let foreign: string[] = [];
  let errors: string[] = [];
  test.beforeEach(({ page }) => {
    foreign = watchOrigins(page);
    errors = watchErrors(page);
  });
  test.afterEach(() => {
    expect(foreign, 'requests to another origin').toEqual([]);
    expect(errors, 'errors in the page').toEqual([]);
  });
}
