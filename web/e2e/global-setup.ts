// Starts a real `seam up` on free loopback ports with a fresh data
// directory and four tokens (admin, the services', an operator's and a
// viewer's), loads it with the incident drill (`seam demo --addr`), and
// hands the addresses and tokens to the tests through the environment.
// The returned function stops Seam and removes the directory.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..');

function token(): string {
  // Seam's own shape: "seam_" and 160 random bits in lower-case base32.
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  const bytes = randomBytes(20);
  let bits = 0;
  let value = 0;
  let out = '';
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return `seam_${out}`;
}

function entry(name: string, roles: string[], tok: string) {
  return { name, roles, hash: `sha256:${createHash('sha256').update(tok).digest('hex')}` };
}

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => ok(port));
    });
  });
}

async function waitReady(url: string, child: ChildProcess, log: string, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`seam up exited with ${child.exitCode}:\n${readFileSync(log, 'utf8')}`);
    try {
      const r = await fetch(url);
      if (r.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`seam up did not become ready at ${url} within ${ms} ms:\n${readFileSync(log, 'utf8')}`);
}

export default async function globalSetup(): Promise<() => Promise<void>> {
  let bin = process.env.SEAM_BIN;
  if (!bin) {
    bin = join(here, '..', '.e2e', 'seam');
    mkdirSync(dirname(bin), { recursive: true });
    const b = spawnSync('go', ['build', '-o', bin, './cmd/seam'], { cwd: repo, stdio: 'inherit' });
    if (b.status !== 0) throw new Error('go build ./cmd/seam failed');
  }
  const dir = mkdtempSync(join(tmpdir(), 'seam-console-e2e-'));
  const tokens = { admin: token(), services: token(), operator: token(), viewer: token() };
  writeFileSync(
    join(dir, 'tokens.json'),
    JSON.stringify({
      tokens: [
        entry('admin', ['admin'], tokens.admin),
        entry('seam-services', ['operator', 'pipeline'], tokens.services),
        entry('otto', ['operator'], tokens.operator),
        entry('vera', ['viewer'], tokens.viewer),
      ],
    }),
    { mode: 0o600 },
  );
  writeFileSync(join(dir, 'admin.token'), `${tokens.admin}\n`, { mode: 0o600 });
  writeFileSync(join(dir, 'service.token'), `${tokens.services}\n`, { mode: 0o600 });

  const grpc = `127.0.0.1:${await freePort()}`;
  const http = `127.0.0.1:${await freePort()}`;
  const log = join(dir, 'up.log');
  const out = openSync(log, 'a');
  const child = spawn(bin, ['up', '--data-dir', dir, '--grpc-addr', grpc, '--http-addr', http, '--log-level', 'warn'], {
    stdio: ['ignore', out, out],
  });
  const stop = async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise<void>((r) => {
        const t = setTimeout(() => {
          child.kill('SIGKILL');
          r();
        }, 15_000);
        child.once('exit', () => {
          clearTimeout(t);
          r();
        });
      });
    }
    if (process.env.SEAM_E2E_KEEP) console.log(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitReady(`http://${http}/readyz`, child, log, 60_000);
    const demo = spawnSync(bin, ['demo', '--addr', grpc, '--data-dir', dir, '--scale', process.env.SEAM_E2E_SCALE ?? '0.01'], {
      encoding: 'utf8',
      timeout: 300_000,
    });
    writeFileSync(join(dir, 'demo.txt'), `${demo.stdout}\n${demo.stderr}`);
    if (demo.status !== 0) throw new Error(`seam demo failed (${demo.status}):\n${demo.stdout}\n${demo.stderr}`);
  } catch (e) {
    await stop();
    throw e;
  }
  process.env.SEAM_URL = `http://${http}`;
  process.env.SEAM_E2E_BIN = bin;
  process.env.SEAM_E2E_DIR = dir;
  process.env.SEAM_E2E_GRPC = grpc;
  process.env.SEAM_ADMIN_TOKEN = tokens.admin;
  process.env.SEAM_OPERATOR_TOKEN = tokens.operator;
  process.env.SEAM_VIEWER_TOKEN = tokens.viewer;
  return stop;
}
