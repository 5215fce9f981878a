// Quarantine: browse held records by partition, reason and check; open
// one; dry-run a replay of a window and, for operators, replay or discard.
import { useEffect, useState } from 'preact/hooks';
import { api, M, SERVICES, stream } from '../api';
import * as data from '../data';
import { decodeRaw, enumName, int, short } from '../format';
import { useAsync } from '../hooks';
import { useLiveReload } from '../live';
import { href, navigate } from '../router';
import { useSession } from '../session';
import type { PartitionPlan, QuarantineCount, QuarantinedRecord, QuarantineFilter, ReplayPlan, ReplaySummary, ReplayWindow, Subject } from '../types';
import { num } from '../types';
import { Badge, Confirm, Empty, ErrorBox, Head, Loading, numCol, Time } from '../components/ui';

const STATES = ['QUARANTINE_STATE_HELD', 'QUARANTINE_STATE_RELEASED', 'QUARANTINE_STATE_DISCARDED'];
const PAGE_SIZE = 50;

function filterFrom(params: URLSearchParams): QuarantineFilter {
  return {
    subject: params.get('subject') ?? undefined,
    partition_from: params.get('from') ?? undefined,
    partition_to: params.get('to') ?? undefined,
    reason: params.get('reason') ?? undefined,
    check: params.get('check') ?? undefined,
    state: params.get('state') ?? undefined,
  };
}

function urlOf(f: QuarantineFilter): string {
  return href('quarantine', { subject: f.subject, from: f.partition_from, to: f.partition_to, reason: f.reason, check: f.check, state: f.state });
}

/** clean drops empty fields so the API's defaults apply (state: HELD). */
function clean(f: QuarantineFilter): QuarantineFilter {
  const out: QuarantineFilter = {};
  for (const [k, v] of Object.entries(f)) if (v !== undefined && v !== '') (out as Record<string, unknown>)[k] = v;
  return out;
}

export function QuarantinePage({ params }: { params: URLSearchParams }) {
  const s = useSession();
  const filter = filterFrom(params);
  const key = JSON.stringify(filter);
  const set = (patch: Partial<QuarantineFilter>) => navigate(urlOf({ ...filter, ...patch }), true);
  const subjects = useAsync(
    (signal) => (s.serves(SERVICES.registry) ? data.subjects(signal) : Promise.resolve([] as Subject[])),
    [],
  );
  const stats = useAsync((signal) => data.quarantineStats(clean(filter), signal), [key]);
  // Counts follow the stream; the list keeps the pages already read until reloaded.
  useLiveReload(stats.reload, ['partitions', 'backfills', 'containment'], filter.subject || undefined);
  const [records, setRecords] = useState<{ list: QuarantinedRecord[]; next?: string; error?: Error; loading: boolean }>({ list: [], loading: true });
  const [tick, setTick] = useState(0);
  const reloadAll = () => {
    stats.reload();
    setTick((t) => t + 1);
  };

  const loadPage = async (token: string | undefined, signal?: AbortSignal) => {
    const r = await api.post<{ records?: QuarantinedRecord[]; next_page_token?: string }>(
      '/v1/quarantine:list',
      { filter: clean(filter), page_size: PAGE_SIZE, page_token: token },
      signal,
    );
    return { list: r.records ?? [], next: r.next_page_token || undefined };
  };
  useEffect(() => {
    const ctl = new AbortController();
    setRecords((r) => ({ ...r, loading: true }));
    loadPage(undefined, ctl.signal).then(
      (p) => setRecords({ ...p, loading: false }),
      (error: Error) => error.name !== 'AbortError' && setRecords({ list: [], error, loading: false }),
    );
    return () => ctl.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key, tick]);

  const st = stats.data;
  const facet = (title: string, items: QuarantineCount[] | undefined, field: keyof QuarantineFilter, map?: (k: string) => Partial<QuarantineFilter>) => (
    <div class="facet">
      <h3>{title}</h3>
      {items && items.length ? (
        <ul>
          {items.map((c) => {
            const patch = map ? map(c.key) : { [field]: c.key };
            const active = Object.entries(patch).every(([k, v]) => (filter as Record<string, unknown>)[k] === v);
            return (
              <li key={c.key}>
                <button type="button" class={`facet-btn ${active ? 'active' : ''}`} aria-pressed={active} onClick={() => set(active ? Object.fromEntries(Object.keys(patch).map((k) => [k, undefined])) : patch)}>
                  <span>{c.key}</span> <span class="count">{int(num(c.count))}</span>
                </button>
              </li>
            );
          })}
        </ul>
      ) : (
        <p class="muted">none</p>
      )}
    </div>
  );

  return (
    <section aria-labelledby="q-title">
      <div class="page-head">
        <h1 id="q-title">Quarantine</h1>
        <p class="muted">Records set aside with why, where and what. Nothing here reached a consumer.</p>
      </div>
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label="Filter quarantined records">
        <label class="field-inline">
          <span>Subject</span>
          {subjects.data && subjects.data.length ? (
            <select value={filter.subject ?? ''} onChange={(e) => set({ subject: (e.target as HTMLSelectElement).value || undefined })}>
              <option value="">all</option>
              {subjects.data.map((x) => (
                <option key={x.name} value={x.name}>
                  {x.name}
                </option>
              ))}
            </select>
          ) : (
            <input type="text" value={filter.subject ?? ''} onChange={(e) => set({ subject: (e.target as HTMLInputElement).value || undefined })} />
          )}
        </label>
        <TextFilter label="Partitions from" size={11} value={filter.partition_from} placeholder="first" onValue={(v) => set({ partition_from: v })} />
        <TextFilter label="to" size={11} value={filter.partition_to} placeholder="last" onValue={(v) => set({ partition_to: v })} />
        <TextFilter label="Reason" size={16} value={filter.reason} placeholder="any" onValue={(v) => set({ reason: v })} />
        <TextFilter label="Check" size={16} value={filter.check} placeholder="any" onValue={(v) => set({ check: v })} />
        <label class="field-inline">
          <span>State</span>
          <select value={filter.state ?? ''} onChange={(e) => set({ state: (e.target as HTMLSelectElement).value || undefined })}>
            <option value="">held</option>
            {STATES.slice(1).map((x) => (
              <option key={x} value={x}>
                {enumName(x, 'QUARANTINE_STATE_').toLowerCase()}
              </option>
            ))}
          </select>
        </label>
        <a class="btn" href={href('quarantine')}>
          Clear
        </a>
      </form>
      <ErrorBox error={stats.error} what="Could not count the quarantine" />
      <div class="q-layout">
        <aside class="facets" aria-label="Counts">
          <p class="total" data-testid="quarantine-total">
            <strong>{st ? int(num(st.total)) : '…'}</strong> records
          </p>
          {facet('By partition', st?.by_partition, 'partition_from', (k) => ({ partition_from: k, partition_to: k }))}
          {facet('By reason', st?.by_reason, 'reason')}
          {facet('By check', st?.by_check, 'check')}
        </aside>
        <div class="q-main">
          {filter.subject && s.serves(SERVICES.gate) ? (
            <ReplayPanel key={`${filter.subject}|${filter.partition_from}|${filter.partition_to}`} filter={filter} stats={st} onChanged={reloadAll} />
          ) : (
            <p class="note">Pick a subject to plan a replay of its held records.</p>
          )}
          {s.can(M.discard) && filter.subject && st && num(st.total) > 0 && (filter.state ?? 'QUARANTINE_STATE_HELD') === 'QUARANTINE_STATE_HELD' ? (
            <DiscardButton filter={filter} count={num(st.total)} onDone={reloadAll} />
          ) : null}
          <ErrorBox error={records.error} what="Could not list the records" />
          {records.loading && records.list.length === 0 ? <Loading what="records" /> : null}
          {!records.loading && records.list.length === 0 && !records.error ? <Empty>No record matches.</Empty> : null}
          {records.list.length > 0 ? (
            <table class="table table-compact" data-testid="quarantine-table">
              <Head columns={['Record', 'Subject', 'Partition', 'Batch', numCol('Position'), 'Version', 'Reasons', 'Held since', 'State']} />
              <tbody>
                {records.list.map((r) => (
                  <tr key={r.id}>
                    <th scope="row">
                      <a href={href(`quarantine/${r.id}`)}>
                        <code>{short(r.id, 10)}</code>
                      </a>
                    </th>
                    <td>{r.subject}</td>
                    <td class="nowrap">{r.partition}</td>
                    <td>
                      <code>{r.batch_id}</code>
                    </td>
                    <td class="num">{r.position}</td>
                    <td>v{r.contract_version}</td>
                    <td class="cell-wrap">
                      {(r.reasons ?? []).map((x, i) => (
                        <div key={i}>
                          <Badge tone="warn">{enumName(x.code, 'ERROR_CODE_')}</Badge> {x.field}
                        </div>
                      ))}
                    </td>
                    <td>
                      <Time ts={r.time} />
                    </td>
                    <td>{enumName(r.state, 'QUARANTINE_STATE_').toLowerCase()}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : null}
          {records.next ? (
            <button
              class="btn"
              type="button"
              disabled={records.loading}
              onClick={async () => {
                setRecords((r) => ({ ...r, loading: true }));
                try {
                  const p = await loadPage(records.next);
                  setRecords((r) => ({ list: [...r.list, ...p.list], next: p.next, loading: false }));
                } catch (error) {
                  setRecords((r) => ({ ...r, error: error as Error, loading: false }));
                }
              }}
            >
              Load {PAGE_SIZE} more
            </button>
          ) : null}
        </div>
      </div>
    </section>
  );
}

function windowOf(filter: QuarantineFilter, stats?: { by_partition?: QuarantineCount[] }): { from: string; to: string } {
  const parts = (stats?.by_partition ?? []).map((c) => c.key).sort();
  return { from: filter.partition_from ?? parts[0] ?? '', to: filter.partition_to ?? parts[parts.length - 1] ?? '' };
}

function ReplayPanel({ filter, stats, onChanged }: { filter: QuarantineFilter; stats?: { by_partition?: QuarantineCount[] }; onChanged: () => void }) {
  const s = useSession();
  const initial = windowOf(filter, stats);
  const [from, setFrom] = useState(initial.from);
  const [to, setTo] = useState(initial.to);
  const [version, setVersion] = useState('');
  const [plan, setPlan] = useState<{ plan: ReplayPlan; window: ReplayWindow }>();
  const [summary, setSummary] = useState<ReplaySummary>();
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);
  const [confirm, setConfirm] = useState(false);
  useEffect(() => {
    // The window follows the facets until someone edits it.
    if (!from && initial.from) setFrom(initial.from);
    if (!to && initial.to) setTo(initial.to);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [initial.from, initial.to]);
  const win = (): ReplayWindow => ({ subject: filter.subject!, partition_from: from.trim(), partition_to: to.trim(), contract_version: Number(version) || 0 });
  const dryRun = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const w = win();
      const p = await api.post<ReplayPlan>('/v1/replay:plan', { window: w });
      setPlan({ plan: p, window: w });
    } catch (e) {
      setError(e as Error);
    } finally {
      setBusy(false);
    }
  };
  const canReplay = s.can(M.replay);
  return (
    <div class="panel" data-testid="replay-panel">
      <h2>Replay {filter.subject}</h2>
      <p class="muted">
        A replay re-runs every held record of the window through the active contract, mapping and id tables, releases what passes with a deterministic record id, and
        names the consumers to rerun. A dry run changes nothing.
      </p>
      <form
        class="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          void dryRun();
        }}
      >
        <label class="field-inline">
          <span>From partition</span>
          <input type="text" size={11} required value={from} onInput={(e) => setFrom((e.target as HTMLInputElement).value)} />
        </label>
        <label class="field-inline">
          <span>to</span>
          <input type="text" size={11} required value={to} onInput={(e) => setTo((e.target as HTMLInputElement).value)} />
        </label>
        <label class="field-inline">
          <span>Through version</span>
          <input type="number" min={0} class="narrow" value={version} placeholder="active" onInput={(e) => setVersion((e.target as HTMLInputElement).value)} />
        </label>
        <button class="btn btn-primary" type="submit" disabled={busy}>
          Dry run
        </button>
        {canReplay ? (
          <button class="btn btn-danger" type="button" disabled={busy || !plan || num(plan.plan.would_release) === 0} onClick={() => setConfirm(true)} title={plan ? undefined : 'Run a dry run first'}>
            Replay…
          </button>
        ) : null}
      </form>
      <ErrorBox error={error} />
      {plan ? <PlanTable plan={plan.plan} window={plan.window} /> : null}
      {summary ? (
        <div class="result" role="status" data-testid="replay-summary">
          Replayed {filter.subject} {plan?.window.partition_from}..{plan?.window.partition_to}: <strong data-testid="replay-released">{int(num(summary.released))}</strong> released,{' '}
          <strong data-testid="replay-remaining">{int(num(summary.remaining))}</strong> still held (replay <code>{summary.replay_id}</code>
          {summary.event_sequence ? `, event #${summary.event_sequence}` : ''}).
          {summary.rerun_consumers?.length ? <> Rerun in this order: {summary.rerun_consumers.join(' → ')}.</> : null}
        </div>
      ) : null}
      {confirm && plan ? (
        <Confirm
          title={`Replay ${plan.window.subject} ${plan.window.partition_from}..${plan.window.partition_to}`}
          confirmLabel="Replay"
          danger
          reason={{ label: 'Reason', placeholder: 'v2 maps the UUIDs back to legacy-int' }}
          onConfirm={async (reason) => {
            let last: ReplaySummary | undefined;
            for await (const msg of stream<{ summary?: ReplaySummary }>('POST', '/v1/replay', { window: plan.window, summary_only: true, reason })) {
              if (msg.summary) last = msg.summary;
            }
            if (!last) throw new Error('the replay ended without a summary');
            setSummary(last);
            const p = await api.post<ReplayPlan>('/v1/replay:plan', { window: plan.window });
            setPlan({ plan: p, window: plan.window });
            onChanged();
          }}
          onClose={() => setConfirm(false)}
        >
          <p>
            The dry run says <strong>{int(num(plan.plan.would_release))}</strong> of {int(num(plan.plan.held))} held records would be released to consumers and{' '}
            {int(num(plan.plan.would_remain))} would stay held. Records released are marked released for good: a second replay releases nothing new. The
            reason goes into the backfill's event, with the consumers to rerun.
          </p>
        </Confirm>
      ) : null}
    </div>
  );
}

/** TextFilter is a labelled text field of the record filter; left empty, it filters nothing. */
function TextFilter({ label, size, value, placeholder, onValue }: { label: string; size: number; value?: string; placeholder: string; onValue: (v: string | undefined) => void }) {
  return (
    <label class="field-inline">
      <span>{label}</span>
      <input type="text" size={size} value={value ?? ''} placeholder={placeholder} onChange={(e) => onValue((e.target as HTMLInputElement).value || undefined)} />
    </label>
  );
}

/** PlanFigures are the cells of a dry run's row: held, would release, would remain. */
function PlanFigures({ f }: { f: Omit<PartitionPlan, 'partition'> }) {
  return (
    <>
      <td class="num" data-col="held">
        {int(num(f.held))}
      </td>
      <td class="num" data-col="would-release">
        {int(num(f.would_release))}
      </td>
      <td class="num" data-col="would-remain">
        {int(num(f.would_remain))}
      </td>
    </>
  );
}

function PlanTable({ plan, window }: { plan: ReplayPlan; window: ReplayWindow }) {
  const parts = plan.partitions ?? [];
  return (
    <div data-testid="replay-plan">
      <table class="table table-compact">
        <caption>
          Dry run of {window.subject} {window.partition_from}..{window.partition_to} through {window.contract_version ? `v${window.contract_version}` : 'the active version'}
        </caption>
        <Head columns={['Partition', numCol('Held'), numCol('Would release'), numCol('Would remain')]} />
        <tbody>
          {parts.map((p) => (
            <tr key={p.partition} data-partition={p.partition}>
              <th scope="row">{p.partition}</th>
              <PlanFigures f={p} />
            </tr>
          ))}
        </tbody>
        <tfoot>
          <tr data-partition="total">
            <th scope="row">total</th>
            <PlanFigures f={plan} />
          </tr>
        </tfoot>
      </table>
      {plan.remain_reasons?.length ? (
        <p>
          Would stay held because of:{' '}
          {plan.remain_reasons.map((r) => (
            <span key={r.key} class="reason-count">
              <Badge tone="warn">{enumName(r.key, 'ERROR_CODE_')}</Badge> {int(num(r.count))}{' '}
            </span>
          ))}
        </p>
      ) : null}
    </div>
  );
}

function DiscardButton({ filter, count, onDone }: { filter: QuarantineFilter; count: number; onDone: () => void }) {
  const [open, setOpen] = useState(false);
  const [done, setDone] = useState<number>();
  const scope = [
    filter.subject,
    filter.partition_from || filter.partition_to ? `partitions ${filter.partition_from ?? 'first'}..${filter.partition_to ?? 'last'}` : 'every partition',
    filter.reason ? `reason ${filter.reason}` : '',
    filter.check ? `check ${filter.check}` : '',
  ]
    .filter(Boolean)
    .join(', ');
  return (
    <div class="discard">
      <button class="btn btn-danger" type="button" onClick={() => setOpen(true)}>
        Discard {int(count)} held…
      </button>
      {done !== undefined ? (
        <span role="status" class="result-inline">
          Discarded {int(done)} records.
        </span>
      ) : null}
      {open ? (
        <Confirm
          title="Discard held records"
          confirmLabel={`Discard ${int(count)}`}
          danger
          reason={{ label: 'Reason', placeholder: 'test traffic sent to the production source' }}
          onConfirm={async (reason) => {
            const r = await api.post<{ discarded?: string }>('/v1/quarantine:discard', { filter: clean({ ...filter, state: undefined }), reason });
            setDone(num(r.discarded));
            onDone();
          }}
          onClose={() => setOpen(false)}
        >
          <p>
            {int(count)} held records ({scope}) will be discarded: they will never be replayed. The records and your reason stay in the quarantine, marked discarded.
          </p>
        </Confirm>
      ) : null}
    </div>
  );
}

export function RecordPage({ id }: { id: string }) {
  const s = useSession();
  const res = useAsync((signal) => api.get<{ record?: QuarantinedRecord }>(`/v1/quarantine/${encodeURIComponent(id)}`, undefined, signal), [id]);
  // A replay (a backfill event) may release it.
  useLiveReload(res.reload, ['backfills'], res.data?.record?.subject);
  const [discard, setDiscard] = useState(false);
  const r = res.data?.record;
  const raw = decodeRaw(r?.raw);
  return (
    <section aria-labelledby="rec-title">
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href={href('quarantine', { subject: r?.subject })}>Quarantine</a> / <span aria-current="page">{short(id, 16)}</span>
      </nav>
      <h1 id="rec-title">Quarantined record</h1>
      <ErrorBox error={res.error} what="Could not load the record" />
      {!r && !res.error ? <Loading what="the record" /> : null}
      {r ? (
        <div>
          <dl class="facts">
            <dt>Record</dt>
            <dd>
              <code>{r.id}</code>
            </dd>
            <dt>Subject</dt>
            <dd>
              <a href={href(`sources/${r.subject}`)}>{r.subject}</a>
            </dd>
            <dt>Partition</dt>
            <dd>{r.partition}</dd>
            <dt>Batch</dt>
            <dd>
              <code>{r.batch_id}</code>, record {r.index}
            </dd>
            <dt>Source position</dt>
            <dd>{r.position}</dd>
            <dt>Judged by</dt>
            <dd>
              v{r.contract_version}, {enumName(r.format, 'FORMAT_')}
            </dd>
            <dt>Held since</dt>
            <dd>
              <Time ts={r.time} />
            </dd>
            <dt>State</dt>
            <dd>
              {enumName(r.state, 'QUARANTINE_STATE_').toLowerCase()}
              {r.state_reason ? ` — ${r.state_reason}` : ''}
              {r.state_by ? ` (by ${r.state_by}, ` : ''}
              {r.state_by ? <Time ts={r.state_time} /> : null}
              {r.state_by ? ')' : ''}
            </dd>
          </dl>
          <h2>Why it is held</h2>
          <table class="table table-compact">
            <Head columns={['Code', 'Field', 'Check', 'Message']} />
            <tbody>
              {(r.reasons ?? []).map((x, i) => (
                <tr key={i}>
                  <td>
                    <Badge tone="warn">{enumName(x.code, 'ERROR_CODE_')}</Badge>
                  </td>
                  <td>{x.field}</td>
                  <td>{x.check}</td>
                  <td class="cell-wrap">{x.message}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <h2>
            Raw bytes <span class="muted">({int(raw.bytes)} bytes{raw.utf8 ? ', UTF-8, exactly as received' : ', not UTF-8: hex'})</span>
          </h2>
          <pre class="raw" tabIndex={0} data-testid="raw">
            {raw.text}
          </pre>
          {s.can(M.discard) && r.state === 'QUARANTINE_STATE_HELD' ? (
            <button class="btn btn-danger" type="button" onClick={() => setDiscard(true)}>
              Discard this record…
            </button>
          ) : null}
          {discard ? (
            <Confirm
              title="Discard this record"
              confirmLabel="Discard"
              danger
              reason={{ label: 'Reason' }}
              onConfirm={async (reason) => {
                await api.post('/v1/quarantine:discard', { ids: [r.id], reason });
                res.reload();
              }}
              onClose={() => setDiscard(false)}
            >
              <p>The record will never be replayed. It stays here, marked discarded, with your reason.</p>
            </Confirm>
          ) : null}
        </div>
      ) : null}
    </section>
  );
}
