import { describe, expect, it } from 'vitest';
import { ApiError, ndjson, query } from './api';

function body(chunks: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(ctl) {
      for (const c of chunks) ctl.enqueue(enc.encode(c));
      ctl.close();
    },
  });
}

async function all<T>(gen: AsyncGenerator<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of gen) out.push(x);
  return out;
}

describe('ndjson', () => {
  it('splits messages across chunk boundaries and multi-byte characters', async () => {
    const line1 = '{"result":{"event":{"sequence":"13","message":"uuid→int"}}}\n';
    const bytes = new TextEncoder().encode(line1 + '{"result":{"summary":{"released":"2"}}}');
    // Cut inside the arrow's three bytes.
    const cut = line1.indexOf('→') + 1;
    const stream = new ReadableStream<Uint8Array>({
      start(ctl) {
        ctl.enqueue(bytes.slice(0, cut));
        ctl.enqueue(bytes.slice(cut));
        ctl.close();
      },
    });
    expect(await all(ndjson(stream))).toEqual([{ event: { sequence: '13', message: 'uuid→int' } }, { summary: { released: '2' } }]);
  });

  it('throws the error a stream ends with', async () => {
    const gen = ndjson(body(['{"result":{"n":1}}\n', '{"error":{"code":9,"message":"source contained","http_code":400}}\n']));
    const got: unknown[] = [];
    await expect(
      (async () => {
        for await (const x of gen) got.push(x);
      })(),
    ).rejects.toThrowError(new ApiError('source contained', 400, 9));
    expect(got).toEqual([{ n: 1 }]);
  });

  it('refuses a line that is not JSON', async () => {
    await expect(all(ndjson(body(['<html>oops</html>\n'])))).rejects.toThrow(/not JSON/);
  });
});

describe('query', () => {
  it('repeats repeated fields and drops empty ones', () => {
    expect(query({ subjects: ['a.b', 'c d'], types: [], after_sequence: 0, limit: 1000, subject: '', x: undefined })).toBe(
      '?subjects=a.b&subjects=c+d&after_sequence=0&limit=1000',
    );
    expect(query({})).toBe('');
  });
});
