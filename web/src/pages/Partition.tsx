// One partition of a source, as the gate judged it: its verdict and which
// checks decided it, each check's figures, threshold, baseline (and the
// partitions the baseline came from) and outcome, its amendments (records
// that came after the seal), resends and replays; and, for a pipeline or
// an admin, the resend of the partition from a corrected file, as a
// replacement through the ordinary ingest route.
import { useState } from 'preact/hooks';
import { api, type Query } from '../api';
import * as data from '../data';
import { enumName, int } from '../format';
import { useAsync } from '../hooks';
import { useLiveReload } from '../live';
import { decided, fraction, isMetric, metric, rate, share, thresholdText, verdictWord, type CheckOutcome, type PartitionState } from '../incident';
import { href } from '../router';
import { useSession } from '../session';
import { num } from '../types';
import { Badge, Confirm, ErrorBox, Head, Loading, Time } from '../components/ui';
import './incident.css';

const INGEST = 'seam.gate.v1.GateService/Ingest';

function partitionPath(subject: string, partition: string): string {
  return `/v1/subjects/${encodeURIComponent(subject)}/partitions/${encodeURIComponent(partition)}`;
}

function tone(verdict?: string): 'ok' | 'warn' | 'bad' | 'muted' {
  const v = enumName(verdict, 'PARTITION_VERDICT_');
  return v === 'BLOCKED' ? 'bad' : v.includes('ALERT') ? 'warn' : v === 'PASSED' ? 'ok' : 'muted';
}

export function PartitionPage({ subject, partition }: { subject: string; partition: string }) {
  const s = useSession();
  const res = useAsync(
    async (signal) => {
      const first = await api.get<{ partition?: PartitionState; amendments?: number }>(partitionPath(subject, partition), { amendment: 0 } as Query, signal);
      const n = first.amendments ?? 0;
      const amendments = await Promise.all(
        Array.from({ length: n }, (_, i) =>
          api.get<{ partition?: PartitionState }>(partitionPath(subject, partition), { amendment: i + 1 }, signal).then((r) => r.partition!),
        ),
      );
      const events = await data
        .events({ subjects: [subject], types: ['EVENT_TYPE_BACKFILL_COMPLETED'] }, signal)
        .then((r) => r.events.filter((e) => (e.partition_from ?? '') <= partition && partition <= (e.partition_to ?? '')))
        .catch(() => []);
      return { state: first.partition!, amendments, events };
    },
    [subject, partition],
  );
  // A resend, a replay or an amendment elsewhere (the CLI, a pipeline)
  // seals the partition again: the page follows.
  useLiveReload(res.reload, ['partitions', 'backfills'], subject);
  const [resent, setResent] = useState<PartitionState>();

  return (
    <section aria-labelledby="partition-title" class="incident">
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href={href('')}>Sources</a> / <a href={href(`sources/${subject}`)}>{subject}</a> / <span aria-current="page">{partition}</span>
      </nav>
      <h1 id="partition-title">
        {subject} partition {partition}
      </h1>
      <ErrorBox error={res.error} what="Could not load the partition" />
      {!res.data && !res.error ? <Loading what="the partition" /> : null}
      {res.data ? (
        <>
          <Judgment state={res.data.state} subject={subject} />
          <Checks state={res.data.state} subject={subject} />
          <h2>Amendments, resends and replays</h2>
          <ul class="incident-list" data-testid="amendments">
            <li>
              Sent {res.data.state.attempt ?? 1} time{(res.data.state.attempt ?? 1) === 1 ? '' : 's'}
              {(res.data.state.attempt ?? 1) > 1 ? ': each resend replaced what was sent before' : ''}.
            </li>
            {res.data.state.sealed_verdict && (res.data.state.sealed_verdict !== res.data.state.verdict || /REPLAY$/.test(res.data.state.seal_cause ?? '')) ? (
              <li>
                First sealed <Badge tone={tone(res.data.state.sealed_verdict)}>{enumName(res.data.state.sealed_verdict, 'PARTITION_VERDICT_')}</Badge> at a
                match rate of {rate(metric(res.data.state.sealed_match_rate))}; judged again since ({enumName(res.data.state.seal_cause, 'SEAL_CAUSE_').toLowerCase()}).
              </li>
            ) : null}
            {res.data.events.map((e) => (
              <li key={String(e.sequence)}>
                Replay (event #{e.sequence}, <Time ts={e.time} />
                {e.principal ? ` by ${e.principal}` : ''}): {e.message}
              </li>
            ))}
            {res.data.amendments.map((a) => (
              <li key={a.amendment}>
                Amendment {a.amendment}: {int(num(a.counts?.received))} records after the seal, judged{' '}
                <Badge tone={tone(a.verdict)}>{enumName(a.verdict, 'PARTITION_VERDICT_')}</Badge> by v{a.contract_version}
                {a.seal_cause ? ` (${enumName(a.seal_cause, 'SEAL_CAUSE_').toLowerCase()})` : ''}
              </li>
            ))}
            {res.data.amendments.length === 0 ? <li>No amendment: nothing arrived after the seal.</li> : null}
          </ul>
          {s.can(INGEST) ? (
            <Resend subject={subject} partition={partition} blocked={/BLOCKED$/.test(res.data.state.verdict ?? '')} onResent={(p) => (setResent(p), res.reload())} />
          ) : null}
          {resent ? (
            <p class="note" role="status" data-testid="resent">
              Resent: attempt {resent.attempt}, {int(num(resent.counts?.received))} records, now{' '}
              <Badge tone={tone(resent.verdict)}>{enumName(resent.verdict, 'PARTITION_VERDICT_')}</Badge>.
            </p>
          ) : null}
        </>
      ) : null}
    </section>
  );
}

function Judgment({ state, subject }: { state: PartitionState; subject: string }) {
  const c = state.counts ?? {};
  const deciders = (state.checks ?? []).filter((x) => decided(x, state.verdict));
  return (
    <div data-testid="judgment">
      <p class="incident-summary">
        <Badge tone={tone(state.verdict)}>{enumName(state.verdict, 'PARTITION_VERDICT_') || enumName(state.status, 'PARTITION_STATUS_')}</Badge>{' '}
        {enumName(state.status, 'PARTITION_STATUS_').toLowerCase()} by v{state.contract_version}
        {state.seal_time ? (
          <>
            {' '}
            at <Time ts={state.seal_time} />
          </>
        ) : null}
        {state.sealed_by ? ` by ${state.sealed_by}` : ''}; {int(num(c.received))} received, {int(num(c.accepted))} accepted, {int(num(c.quarantined))}{' '}
        quarantined ({int(num(c.duplicates))} duplicates), {int(num(c.released))} released; match rate {rate(metric(state.match_rate))}.
      </p>
      {state.notice ? <p class="note">{state.notice}</p> : null}
      <p data-testid="decided-by">
        {deciders.length > 0 ? (
          <>
            Decided by: <strong>{deciders.map((d) => d.check).join(', ')}</strong>.
          </>
        ) : /PASSED$/.test(state.verdict ?? '') ? (
          'No check failed: it passed.'
        ) : (
          'No check decided a verdict yet.'
        )}{' '}
        <a href={href('quarantine', { subject, from: state.partition, to: state.partition })}>Its quarantine.</a>
      </p>
    </div>
  );
}

function figures(c: CheckOutcome): string {
  if (isMetric(c)) {
    const o = metric(c.observed);
    if (o === null) return '–';
    return c.kind === 'match_rate' || c.kind === 'null_rate' ? share(o) : c.kind === 'row_count' ? int(o) : o.toFixed(2);
  }
  const rows = num(c.rows);
  return `${int(num(c.failures))} of ${int(rows)} failed${rows ? ` (${fraction(num(c.failures) / rows)})` : ''}`;
}

function baseline(c: CheckOutcome): string {
  const b = metric(c.baseline);
  if (b === null) return isMetric(c) ? 'none yet' : '–';
  return c.kind === 'match_rate' || c.kind === 'null_rate' ? share(b) : c.kind === 'row_count' ? int(b) : b.toFixed(2);
}

function Checks({ state, subject }: { state: PartitionState; subject: string }) {
  const checks = state.checks ?? [];
  if (checks.length === 0) return <p class="muted">No check outcome is recorded for this partition.</p>;
  return (
    <div class="frame">
      <table class="table table-compact cards" data-testid="checks-table">
        <caption>Checks</caption>
        <Head columns={['Check', 'Policy', 'Figures', 'Threshold', 'Baseline', 'Outcome']} />
        <tbody>
          {checks.map((c) => {
            const d = decided(c, state.verdict);
            return (
              <tr key={c.check} class={d ? 'row-bad' : ''} data-check={c.check} data-decided={d ? 'yes' : 'no'}>
                <th scope="row">
                  {c.check}
                  <div class="muted">
                    <code>{c.rule || c.kind}</code>
                  </div>
                </th>
                <td data-label="Policy">{enumName(c.policy, 'POLICY_')}</td>
                <td data-label="Figures">{figures(c)}</td>
                <td data-label="Threshold">{thresholdText(c)}</td>
                <td data-label="Baseline">
                  {baseline(c)}
                  {(c.baseline_partitions ?? []).length > 0 ? (
                    <div class="muted">
                      from{' '}
                      {(c.baseline_partitions ?? []).map((p, i) => (
                        <span key={p}>
                          {i ? ', ' : ''}
                          <a href={href(`partition/${subject}/${p}`)}>{p}</a>
                        </span>
                      ))}
                    </div>
                  ) : null}
                </td>
                <td data-label="Outcome">
                  {d ? <Badge tone="bad">decided</Badge> : null} {verdictWord(c)}
                  {c.message ? <div class="muted">{c.message}</div> : null}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

const FORMATS: Record<string, string> = { ndjson: 'FORMAT_NDJSON', jsonl: 'FORMAT_NDJSON', csv: 'FORMAT_CSV', json: 'FORMAT_JSON' };

/** base64 encodes bytes for a bytes field of the REST API. */
function base64(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** contentID names a file as `seam gate ingest` does: its name and a hash of its content. */
async function contentID(name: string, bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  let hex: string;
  if (globalThis.crypto?.subtle) {
    const h = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
    hex = Array.from(h.subarray(0, 8), (b) => b.toString(16).padStart(2, '0')).join('');
  } else {
    // No Web Crypto outside a secure context: FNV-1a 64 names it as well.
    let h = 0xcbf29ce484222325n;
    for (const b of bytes) h = BigInt.asUintN(64, (h ^ BigInt(b)) * 0x100000001b3n);
    hex = h.toString(16).padStart(16, '0');
  }
  return `${name}@${hex}`;
}

function Resend({ subject, partition, blocked, onResent }: { subject: string; partition: string; blocked: boolean; onResent: (p: PartitionState) => void }) {
  const [file, setFile] = useState<File | null>(null);
  const [confirm, setConfirm] = useState(false);
  const [error, setError] = useState<Error>();
  const ext = file?.name.split('.').pop()?.toLowerCase() ?? '';
  return (
    <form
      class="incident-form"
      data-testid="resend-form"
      onSubmit={(e) => {
        e.preventDefault();
        setError(undefined);
        if (!file) return setError(new Error('Choose the corrected file first'));
        if (!FORMATS[ext]) return setError(new Error(`${file.name}: the format is read from the extension; give a .ndjson, .jsonl, .csv or .json file`));
        setConfirm(true);
      }}
    >
      <h2>Resend this partition from a file</h2>
      <p>
        {blocked ? 'This partition is BLOCKED: nothing of it may be published. ' : ''}
        The file is sent as a new sending of {partition} that replaces everything sent before (held records are kept, marked superseded), and the partition is
        sealed and judged again, as <code>seam gate ingest --replace</code> does.
      </p>
      <label class="field">
        <span>Corrected file (.ndjson, .csv or .json)</span>
        <input type="file" accept=".ndjson,.jsonl,.csv,.json" onChange={(e) => setFile((e.target as HTMLInputElement).files?.[0] ?? null)} />
      </label>
      <button type="submit" class="btn" disabled={!file}>
        Resend…
      </button>
      <ErrorBox error={error} />
      {confirm && file ? (
        <Confirm
          title={`Resend ${partition} of ${subject}`}
          confirmLabel="Resend as replacement"
          danger
          onConfirm={async () => {
            const bytes = new Uint8Array(await file.arrayBuffer());
            const r = await api.post<{ partition?: PartitionState }>(`/v1/subjects/${encodeURIComponent(subject)}:ingest`, {
              subject,
              partition,
              batch_id: await contentID(file.name, bytes),
              batch: { raw: { format: FORMATS[ext], data: base64(bytes) } },
              replace: true,
              seal: true,
              summary_only: true,
            });
            if (r.partition) onResent(r.partition);
          }}
          onClose={() => setConfirm(false)}
        >
          <p>
            {file.name} ({int(file.size)} bytes) replaces every record sent for {partition} so far. The gate judges it whole at once.
          </p>
        </Confirm>
      ) : null}
    </form>
  );
}
