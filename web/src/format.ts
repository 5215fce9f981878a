// Formatting shared by every page. Numbers use a fixed locale so a page
// reads the same on every machine (and in screenshots).

const intFmt = new Intl.NumberFormat('en-US');

export function int(n: number): string {
  return Number.isFinite(n) ? intFmt.format(n) : '–';
}

/** MORE_DIGITS is how many digits pct adds to keep a share on its side of a bound. */
const MORE_DIGITS = 3;

/**
 * pct renders a share (0.979) as "97.9%"; a negative or missing share as
 * "–". Given the bound the share is shown against (a minimum match rate),
 * rounding never moves it onto or across the bound: 0.8999 against 0.9 is
 * "89.99%", not "90.0%". It shows up to MORE_DIGITS more digits, then cuts
 * the value toward its side.
 */
export function pct(share: number | undefined | null, digits = 1, bound?: number | null): string {
  if (share === undefined || share === null || !Number.isFinite(share) || share < 0) return '–';
  const v = share * 100;
  if (bound === undefined || bound === null || !Number.isFinite(bound)) return `${v.toFixed(digits)}%`;
  const b = bound * 100;
  // Shares and bounds come as binary fractions: 0.9 * 100 is 90.00000000000001.
  const eps = 1e-12 * Math.max(1, Math.abs(b));
  const side = Math.abs(v - b) <= eps ? 0 : Math.sign(v - b);
  if (side === 0) return `${b.toFixed(digits)}%`;
  for (let d = digits; d <= digits + MORE_DIGITS; d++) {
    const shown = v.toFixed(d);
    const r = Number(shown);
    if (Math.abs(r - b) > eps && Math.sign(r - b) === side) return `${shown}%`;
  }
  const d = digits + MORE_DIGITS;
  const scale = 10 ** d;
  const cut = (side < 0 ? Math.floor(v * scale - eps) : Math.ceil(v * scale + eps)) / scale;
  return `${cut.toFixed(d)}%`;
}

/**
 * boundOf reads the bound a statistical check's message names ("…, below
 * the minimum 90%"), as a share; undefined when it names none.
 */
export function boundOf(message: string | undefined): number | undefined {
  const m = /(?:below the minimum|above the maximum) (-?[0-9.]+(?:e[-+]?[0-9]+)?)%/.exec(message ?? '');
  if (!m) return undefined;
  const v = Number(m[1]);
  return Number.isFinite(v) ? v / 100 : undefined;
}

/** enumName drops the proto enum prefix: "SEVERITY_CRITICAL" → "CRITICAL". */
export function enumName(v: string | undefined, prefix: string): string {
  if (!v) return '–';
  return v.startsWith(prefix) ? v.slice(prefix.length) : v;
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

/** time renders an RFC 3339 time stamp in UTC, to the second. */
export function time(ts: string | undefined): string {
  if (!ts) return '–';
  const d = new Date(ts);
  if (Number.isNaN(d.getTime())) return ts;
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}Z`;
}

/** duration renders milliseconds as "13d 4h 2m 5s", dropping leading zero units. */
export function duration(ms: number): string {
  const neg = ms < 0;
  let s = Math.floor(Math.abs(ms) / 1000);
  const d = Math.floor(s / 86400);
  s -= d * 86400;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  const parts: string[] = [];
  if (d) parts.push(`${d}d`);
  if (d || h) parts.push(`${h}h`);
  if (d || h || m) parts.push(`${m}m`);
  parts.push(`${s}s`);
  return (neg ? '-' : '') + parts.join(' ');
}

/** countdown says how far an effective time is from now. */
export function countdown(ts: string | undefined, now: number): string {
  if (!ts) return '–';
  const at = new Date(ts).getTime();
  if (Number.isNaN(at)) return ts;
  const ms = at - now;
  return ms > 0 ? `in ${duration(ms)}` : `due ${duration(-ms)} ago`;
}

/** short shortens long identifiers (hashes, record ids) for tables. */
export function short(s: string | undefined, n = 12): string {
  if (!s) return '–';
  return s.length > n ? `${s.slice(0, n)}…` : s;
}

/** decodeRaw turns base64 bytes into text when they are UTF-8, else a hex dump. */
export function decodeRaw(b64: string | undefined): { text: string; utf8: boolean; bytes: number } {
  if (!b64) return { text: '', utf8: true, bytes: 0 };
  const bin = atob(b64);
  const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return { text, utf8: true, bytes: bytes.length };
  } catch {
    const lines: string[] = [];
    for (let off = 0; off < bytes.length; off += 16) {
      const row = bytes.slice(off, off + 16);
      const hex = Array.from(row, (b) => b.toString(16).padStart(2, '0')).join(' ');
      const ascii = Array.from(row, (b) => (b >= 32 && b < 127 ? String.fromCharCode(b) : '.')).join('');
      lines.push(`${off.toString(16).padStart(8, '0')}  ${hex.padEnd(47)}  ${ascii}`);
    }
    return { text: lines.join('\n'), utf8: false, bytes: bytes.length };
  }
}
