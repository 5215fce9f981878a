// Identifiers: idmap's namespaces with their formats, rules and lookup
// tables, the hit and miss counters, recent audited changes, and a box to
// translate ids by hand.
import { useState } from 'preact/hooks';
import { api } from '../api';
import { enumName, int, pct } from '../format';
import { useAsync } from '../hooks';
import { useLivePoll } from '../live';
import type { IdAudit, IdCounter, IdRule, Namespace, TranslateResult } from '../types';
import { num } from '../types';
import { AuditTable, Badge, Empty, ErrorBox, Head, Loading, numCol, Time } from '../components/ui';

const MAX_IDS = 1000;

function strategy(r: IdRule): string {
  if (r.template) return `template ${r.template.template ?? ''}`;
  if (r.uuid_embed) return `uuid embed, prefix ${r.uuid_embed.prefix ?? ''}`;
  if (r.uuid_v5) return `uuid v5 in ${r.uuid_v5.namespace_uuid ?? ''}`;
  if (r.normalize) return `normalize${r.normalize.case ? ` to ${r.normalize.case} case` : ''}${r.normalize.trim_space ? ', trim spaces' : ''}`;
  if (r.lookup) return 'lookup table';
  return 'unknown';
}

export function IdentifiersPage() {
  const res = useAsync(async (signal) => {
    const [ns, stats, audit] = await Promise.all([
      api.get<{ namespaces?: Namespace[] }>('/v1/namespaces', undefined, signal),
      api.get<{ counters?: IdCounter[] }>('/v1/idmap/stats', undefined, signal),
      api.get<{ records?: IdAudit[] }>('/v1/idmap/audit', { limit: 50 }, signal),
    ]);
    return { namespaces: ns.namespaces ?? [], counters: stats.counters ?? [], audit: audit.records ?? [] };
  }, []);
  // Table loads and lookups are not in the event stream: the page polls.
  useLivePoll(res.reload);
  if (res.error) return <ErrorBox error={res.error} what="Could not load idmap" />;
  if (!res.data) return <Loading what="namespaces" />;
  const { namespaces, counters, audit } = res.data;
  return (
    <section aria-labelledby="id-title">
      <div class="page-head">
        <h1 id="id-title">Identifiers</h1>
        <button class="btn" type="button" onClick={res.reload} disabled={res.loading}>
          Refresh
        </button>
      </div>
      {namespaces.length === 0 ? <Empty>No namespace yet. Create one with `seam idmap namespace create`.</Empty> : null}
      {namespaces.length > 0 ? <Translate namespaces={namespaces} /> : null}
      {namespaces.map((n) => (
        <article key={n.name} class="panel" aria-labelledby={`ns-${n.name}`} data-testid={`namespace-${n.name}`}>
          <h2 id={`ns-${n.name}`}>
            {n.name} <span class="muted">{n.description}</span>
          </h2>
          <div class="three-col">
            <table class="table table-compact">
              <caption>Formats</caption>
              <Head columns={['Format', 'Kind', 'Pattern']} />
              <tbody>
                {(n.formats ?? []).map((f) => (
                  <tr key={f.name}>
                    <th scope="row">{f.name}</th>
                    <td>{enumName(f.kind, 'FORMAT_KIND_').toLowerCase()}</td>
                    <td>
                      <code>{f.pattern}</code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <table class="table table-compact">
              <caption>Rules</caption>
              <Head columns={['From → to', 'Strategy']} />
              <tbody>
                {(n.rules ?? []).length === 0 ? (
                  <tr>
                    <td colSpan={2} class="muted">
                      none: pairs go through lookup tables
                    </td>
                  </tr>
                ) : null}
                {(n.rules ?? []).map((r, i) => (
                  <tr key={i}>
                    <th scope="row">
                      {r.from_format} {r.reversible ? '↔' : '→'} {r.to_format}
                    </th>
                    <td>
                      <code>{strategy(r)}</code>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <table class="table table-compact" data-testid="tables">
              <caption>Lookup tables</caption>
              <Head columns={['Formats', numCol('Pairs'), numCol('Generation'), 'Updated']} />
              <tbody>
                {(n.tables ?? []).length === 0 ? (
                  <tr>
                    <td colSpan={4} class="muted">
                      none
                    </td>
                  </tr>
                ) : null}
                {(n.tables ?? []).map((t) => (
                  <tr key={`${t.from_format}-${t.to_format}`}>
                    <th scope="row">
                      {t.from_format} ↔ {t.to_format}
                    </th>
                    <td class="num">{int(num(t.pairs))}</td>
                    <td class="num">{int(num(t.generation))}</td>
                    <td>
                      <Time ts={t.update_time} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </article>
      ))}
      <h2>Translations since this process started</h2>
      {counters.length === 0 ? (
        <Empty>No translation counted yet.</Empty>
      ) : (
        <table class="table table-compact" data-testid="idmap-stats">
          <Head columns={['Namespace', 'From → to', numCol('Hits'), numCol('Misses'), numCol('Invalid'), numCol('Hit rate')]} />
          <tbody>
            {counters.map((c, i) => {
              const hits = num(c.hits);
              const total = hits + num(c.misses) + num(c.invalid);
              return (
                <tr key={i}>
                  <th scope="row">{c.namespace}</th>
                  <td>
                    {c.from_format} → {c.to_format}
                  </td>
                  <td class="num">{int(hits)}</td>
                  <td class="num">{int(num(c.misses))}</td>
                  <td class="num">{int(num(c.invalid))}</td>
                  <td class="num">
                    {total ? pct(hits / total) : '–'}
                    {total ? <meter min={0} max={1} value={hits / total} low={0.9} optimum={1} aria-hidden="true" /> : null}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      <h2>Recent changes</h2>
      <AuditTable
        records={audit}
        empty="No audited change."
        columns={[
          ['Namespace', (a) => a.namespace],
          ['Action', (a) => a.action],
        ]}
      />
    </section>
  );
}

function Translate({ namespaces }: { namespaces: Namespace[] }) {
  const [ns, setNs] = useState(namespaces[0].name);
  const formats = namespaces.find((n) => n.name === ns)?.formats ?? [];
  const [from, setFrom] = useState(formats[0]?.name ?? '');
  const [to, setTo] = useState(formats[1]?.name ?? formats[0]?.name ?? '');
  const [ids, setIds] = useState('');
  const [result, setResult] = useState<{ ids: string[]; r: TranslateResult }>();
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const list = ids
      .split(/\r?\n/)
      .map((x) => x.trim())
      .filter(Boolean);
    if (list.length === 0) {
      setError(new Error('Enter at least one id, one per line.'));
      return;
    }
    if (list.length > MAX_IDS) {
      setError(new Error(`Enter at most ${MAX_IDS} ids here (got ${list.length}); translate more with the seam command or the API.`));
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      const r = await api.post<TranslateResult>(`/v1/namespaces/${encodeURIComponent(ns)}:translate`, { from_format: from, to_format: to, ids: list });
      setResult({ ids: list, r });
    } catch (err) {
      setError(err as Error);
    } finally {
      setBusy(false);
    }
  };
  const pick = (label: string, value: string, names: string[], onPick: (name: string) => void) => (
    <label class="field-inline">
      <span>{label}</span>
      <select value={value} onChange={(e) => onPick((e.target as HTMLSelectElement).value)}>
        {names.map((name) => (
          <option key={name} value={name}>
            {name}
          </option>
        ))}
      </select>
    </label>
  );
  const formatNames = formats.map((f) => f.name);
  return (
    <form class="panel translate" onSubmit={submit} aria-labelledby="translate-title" data-testid="translate">
      <h2 id="translate-title">Translate</h2>
      <div class="inline-form">
        {pick(
          'Namespace',
          ns,
          namespaces.map((n) => n.name),
          (name) => {
            setNs(name);
            const f = namespaces.find((n) => n.name === name)?.formats ?? [];
            setFrom(f[0]?.name ?? '');
            setTo(f[1]?.name ?? f[0]?.name ?? '');
          },
        )}
        {pick('From format', from, formatNames, setFrom)}
        {pick('to format', to, formatNames, setTo)}
        <button class="btn btn-primary" type="submit" disabled={busy}>
          Translate
        </button>
      </div>
      <label class="field">
        <span>Ids, one per line</span>
        <textarea rows={3} value={ids} onInput={(e) => setIds((e.target as HTMLTextAreaElement).value)} spellcheck={false} />
      </label>
      <ErrorBox error={error} />
      {result ? (
        <table class="table table-compact" data-testid="translate-result">
          <caption>
            {int(num(result.r.hits))} hit, {int(num(result.r.misses))} miss, {int(num(result.r.invalid))} invalid
          </caption>
          <Head columns={[from, 'Outcome', to]} />
          <tbody>
            {result.ids.map((id, i) => {
              const st = enumName(result.r.statuses?.[i], 'TRANSLATE_STATUS_');
              return (
                <tr key={i}>
                  <td>
                    <code>{id}</code>
                  </td>
                  <td>
                    <Badge tone={st === 'HIT' ? 'ok' : st === 'MISS' ? 'warn' : 'bad'}>{st.toLowerCase()}</Badge>
                  </td>
                  <td>
                    <code>{result.r.values?.[i] ?? ''}</code>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : null}
    </form>
  );
}
