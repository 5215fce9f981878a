// A source's incident, as `seam incident` shows it: what broke and since
// which partition, what the gate holds, who the fix reaches, the proposed
// contract and id mapping, the dry run, and the steps, which an admin
// applies from here with a reason, watching each step and the replay's
// progress. The plan is not computed here: `seam up` serves the command's
// own document (GET /v1/subjects/{s}/incident), so page and command agree.
import { useState } from 'preact/hooks';
import { ApiError, api, M, stream } from '../api';
import { int, pct } from '../format';
import { useAsync } from '../hooks';
import { useLiveReload } from '../live';
import { problemResolvedByFix, rate, span, type ApplyEvent, type IncidentPartition, type IncidentStep, type IncidentView } from '../incident';
import { href } from '../router';
import { useSession } from '../session';
import { Badge, Empty, ErrorBox, Head, Loading, numCol } from '../components/ui';
import './incident.css';

const REGISTER = 'seam.registry.v1.RegistryService/RegisterContract';

// The figures of each partition of the window: the heading of its column
// (and, on a phone, of its card line) and the value.
const windowFigures: [string, (p: IncidentPartition) => string][] = [
  ['Received', (p) => int(p.received)],
  ['Quarantined', (p) => int(p.quarantined)],
  ['Released', (p) => int(p.released)],
  ['Match rate', (p) => rate(p.match_rate)],
];

function path(subject: string, action = ''): string {
  return `/v1/subjects/${encodeURIComponent(subject)}/incident${action}`;
}

interface Pairs {
  name: string;
  csv: string;
  noHeader: boolean;
}

function body(pairs: Pairs | null, reason?: string) {
  return { pairs_csv: pairs?.csv ?? '', pairs_name: pairs?.name ?? '', no_header: pairs?.noHeader ?? false, reason: reason ?? '' };
}

export function IncidentPage({ subject }: { subject: string }) {
  const s = useSession();
  const [pairs, setPairs] = useState<Pairs | null>(null);
  const plan = useAsync(
    (signal) => (pairs ? api.post<IncidentView>(path(subject, ':plan'), body(pairs), signal) : api.get<IncidentView>(path(subject), undefined, signal)),
    [subject, pairs],
  );
  const [applied, setApplied] = useState<IncidentView | null>(null);
  const [applying, setApplying] = useState(false);
  // The plan follows the stream (a partition sealed, an alert raised or
  // resolved, the source contained or a version registered elsewhere),
  // except while the fix is applied from here or once it has been: the
  // apply's own steps raise those events, and its outcome is what the
  // page shows then.
  useLiveReload(
    () => {
      if (!applying && !applied) plan.reload();
    },
    ['partitions', 'alerts', 'containment', 'versions', 'backfills'],
    subject,
  );
  const mayApply = s.can(M.contain) && s.can(M.release) && s.can(M.replay) && s.can(REGISTER);
  const view = applied ?? plan.data;
  const unserved = plan.error instanceof ApiError && plan.error.status === 404;

  return (
    <section aria-labelledby="incident-title" class="incident">
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href={href('')}>Sources</a> / <a href={href(`sources/${subject}`)}>{subject}</a> / <span aria-current="page">Incident</span>
      </nav>
      <h1 id="incident-title">Incident on {subject}</h1>
      {unserved ? (
        <p class="note">
          This Seam does not serve the incident view: `seam up` does, where the gate, the registry and idmap run together. From a shell:{' '}
          <code>seam incident {subject}</code>.
        </p>
      ) : (
        <ErrorBox error={plan.error} what="Could not plan the fix" />
      )}
      {!view && !plan.error ? <Loading what="the incident" /> : null}
      {applied ? <Outcome view={applied} /> : null}
      {view ? <Plan view={view} applied={!!applied} /> : null}
      {view && !applied && (view.migrations ?? []).some((m) => m.missing || m.pairs_from) ? (
        <PairsForm pairs={pairs} onPairs={setPairs} busy={plan.loading} />
      ) : null}
      {view && !applied && ((view.steps ?? []).length > 0 || applying) ? (
        mayApply ? (
          <ApplyForm subject={subject} pairs={pairs} view={view} onApplied={setApplied} onBusy={setApplying} />
        ) : (
          <p class="note" data-testid="apply-needs-role">
            Applying the fix contains, registers and replays: it needs an admin (the notice waiver is an admin's). You can read the plan.
          </p>
        )
      ) : null}
    </section>
  );
}

function Plan({ view, applied }: { view: IncidentView; applied: boolean }) {
  const changed = view.changed ?? [];
  const radius = view.blast_radius ?? [];
  const parts = view.partitions ?? [];
  const p = view.proposal;
  return (
    <div>
      <p class="incident-summary" data-testid="incident-summary">
        <strong>
          {view.subject}: v{view.active_version} active,{' '}
          {view.contained ? <Badge tone="bad">contained</Badge> : <Badge tone="ok">flowing</Badge>}; {int(view.held)} records held
          {view.since ? (
            <>
              {' '}
              since partition <a href={href(`partition/${view.subject}/${view.since}`)}>{view.since}</a>
            </>
          ) : null}
        </strong>
        {view.window?.length ? (
          <span>
            {' '}
            — the incident's window is {span(view.window)} ({view.window.length} partition{view.window.length === 1 ? '' : 's'}, {int(view.window_held)} records held)
          </span>
        ) : null}
      </p>
      <h2>What broke</h2>
      {changed.length === 0 ? (
        <Empty>No open alert says the source changed.</Empty>
      ) : (
        <ul class="incident-list" data-testid="what-changed">
          {changed.map((a) => (
            <li key={a.sequence}>
              <Badge tone="bad">{a.kind}</Badge> {a.field ? <code>{a.field}</code> : null} on{' '}
              {a.partition ? <a href={href(`partition/${view.subject}/${a.partition}`)}>{a.partition}</a> : '–'} (#{a.sequence}): {a.message}
            </li>
          ))}
        </ul>
      )}
      {parts.length > 0 ? (
        <div class="frame">
          <table class="table table-compact cards" data-testid="incident-window">
            <caption>The window as the gate stands it</caption>
            <Head columns={['Partition', 'Verdict', 'As sealed', ...windowFigures.map(([label]) => numCol(label))]} />
            <tbody>
              {parts.map((x) => (
                <tr key={x.partition}>
                  <th scope="row">
                    <a href={href(`partition/${view.subject}/${x.partition}`)}>{x.partition}</a>
                  </th>
                  <td data-label="Verdict">{x.verdict}</td>
                  <td data-label="As sealed">{x.sealed_verdict || '–'}</td>
                  {windowFigures.map(([label, figure]) => (
                    <td key={label} data-label={label} class="num">
                      {figure(x)}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {view.held > 0 ? (
        <p class="muted">
          Held by reason:{' '}
          {Object.entries(view.held_by_reason ?? {})
            .sort((a, b) => b[1] - a[1])
            .map(([k, v]) => `${k} ${int(v)}`)
            .join(', ')}
          . <a href={href('quarantine', { subject: view.subject })}>See the held records.</a>
        </p>
      ) : null}
      <h2>Blast radius</h2>
      {radius.length === 0 ? (
        <Empty>No consumer declared lineage that the fix reaches.</Empty>
      ) : (
        <ol class="incident-list" data-testid="incident-radius">
          {radius.map((c) => (
            <li key={c.consumer}>
              <strong>{c.consumer}</strong> (depth {c.depth}
              {c.owner ? `, owner ${c.owner}` : ''}) via {(c.path ?? []).join(' → ')}
            </li>
          ))}
        </ol>
      )}
      <h2>Proposed contract</h2>
      {!p ? (
        <Empty>The gate holds no records of {view.subject}: no incident to fix.</Empty>
      ) : (p.changes ?? []).length === 0 ? (
        <p>The held records need no change to v{view.active_version}: a replay through it is the fix.</p>
      ) : (
        <>
          <p>
            v{view.next_version}, {p.breaking ? <Badge tone="warn">breaking</Badge> : <Badge tone="ok">additive</Badge>}, inferred from {int(view.read)} held
            records:
          </p>
          <ul class="incident-list" data-testid="incident-changes">
            {(p.changes ?? []).map((c) => (
              <li key={c.path + c.rule}>
                <code>{c.rule}</code> at <code>{c.path}</code>
                {c.old || c.new ? (
                  <>
                    : {c.old || '–'} → {c.new || '–'}
                  </>
                ) : null}
              </li>
            ))}
          </ul>
          {p.yaml ? (
            <details class="contract">
              <summary>v{view.next_version} as YAML</summary>
              <pre class="incident-yaml">{p.yaml}</pre>
            </details>
          ) : null}
        </>
      )}
      {view.registry ? (
        <div data-testid="incident-registry">
          <p>
            Registry on v{view.next_version}: <strong>{view.registry.verdict}</strong>
            {view.registry.notice_owed ? `; owes ${view.registry.notice_owed} notice (an admin waives it with the reason)` : ''}
            {view.data_effective_time ? `; judges partitions from ${view.since} on` : ''}
          </p>
          <ul class="incident-list">
            {(view.registry.problems ?? []).map((pr) => (
              <li key={pr}>
                {problemResolvedByFix(pr) ? <Badge tone="info">resolved by the fix</Badge> : <Badge tone="bad">stops it</Badge>} {pr}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
      {(view.migrations ?? []).length > 0 ? (
        <>
          <h2>Identifier mapping</h2>
          <ul class="incident-list" data-testid="incident-migrations">
            {(view.migrations ?? []).map((m) => (
              <li key={m.field}>
                <code>{m.field}</code>: {m.namespace}/{m.new} → {m.target || '–'}
                {m.create_format ? ` (new format ${m.create_format.name}, ${m.create_format.kind})` : ''} —{' '}
                {m.missing ? <span class="text-bad">{m.missing}</span> : m.rule_to_set ? `rule ${m.rule_to_set}: ${m.how}` : m.how}
              </li>
            ))}
          </ul>
        </>
      ) : null}
      <h2>Dry run</h2>
      {view.dry_run ? (
        <p data-testid="incident-dry-run">
          Of the {int(view.dry_run.records)} records read, <strong>{int(view.dry_run.passed)} would be released</strong> (
          {pct(view.dry_run.records ? view.dry_run.passed / view.dry_run.records : 0)})
          {view.dry_run.records > view.dry_run.passed
            ? `, ${int(view.dry_run.records - view.dry_run.passed)} would stay (${Object.entries(view.dry_run.remain ?? {})
                .map(([k, v]) => `${k} ${int(v)}`)
                .join(', ')})`
            : ''}
          .{view.window_held > view.dry_run.records ? ` The replay runs on all ${int(view.window_held)} held records of ${span(view.window)}.` : ''}
        </p>
      ) : view.dry_run_error ? (
        <p class="text-bad">Dry run not possible: {view.dry_run_error}</p>
      ) : (
        <Empty>Nothing to simulate.</Empty>
      )}
      {applied ? null : (
        <>
          <h2>Steps</h2>
          <Steps steps={view.steps ?? []} />
        </>
      )}
    </div>
  );
}

function Steps({ steps, current }: { steps: IncidentStep[]; current?: number }) {
  if (steps.length === 0) return <Empty>Nothing to do.</Empty>;
  return (
    <ol class="incident-steps" data-testid="incident-steps">
      {steps.map((st, i) => {
        const state = st.failed ? 'failed' : st.result ? 'done' : st.done ? 'skipped' : current === i ? 'running' : 'todo';
        return (
          <li key={i} data-state={state}>
            <div>
              <strong>{st.name}</strong>{' '}
              {state === 'failed' ? (
                <Badge tone="bad">failed</Badge>
              ) : state === 'done' ? (
                <Badge tone="ok">done</Badge>
              ) : state === 'skipped' ? (
                <Badge tone="muted">already done</Badge>
              ) : state === 'running' ? (
                <Badge tone="info">running…</Badge>
              ) : null}
            </div>
            {st.failed ? <div class="text-bad">{st.failed}</div> : st.result ? <div>{st.result}</div> : st.why ? <div class="muted">{st.why}</div> : null}
            <code class="incident-cmd">{st.command}</code>
          </li>
        );
      })}
    </ol>
  );
}

function PairsForm({ pairs, onPairs, busy }: { pairs: Pairs | null; onPairs: (p: Pairs | null) => void; busy: boolean }) {
  const [noHeader, setNoHeader] = useState(false);
  const [error, setError] = useState<Error>();
  return (
    <form class="incident-form" onSubmit={(e) => e.preventDefault()} data-testid="pairs-form">
      <h2>Pairs from the source</h2>
      <p>
        An identifier no rule translates needs the source's pairs (new id, target id), as <code>--pairs</code> gives them to the command. The plan and its
        dry run are redone with them; nothing is loaded until the fix is applied.
      </p>
      <label class="field">
        <span>Pairs CSV</span>
        <input
          type="file"
          accept=".csv,text/csv"
          disabled={busy}
          onChange={async (e) => {
            const f = (e.target as HTMLInputElement).files?.[0];
            setError(undefined);
            if (!f) return onPairs(null);
            try {
              onPairs({ name: f.name, csv: await f.text(), noHeader });
            } catch (err) {
              setError(err as Error);
            }
          }}
        />
      </label>
      <label class="field-inline">
        <input
          type="checkbox"
          checked={noHeader}
          onChange={(e) => {
            const v = (e.target as HTMLInputElement).checked;
            setNoHeader(v);
            if (pairs) onPairs({ ...pairs, noHeader: v });
          }}
        />
        <span>the first row is data, not a header</span>
      </label>
      {pairs ? <p class="muted">Planned with {pairs.name}.</p> : null}
      <ErrorBox error={error} what="Could not read the file" />
    </form>
  );
}

function ApplyForm({
  subject,
  pairs,
  view,
  onApplied,
  onBusy,
}: {
  subject: string;
  pairs: Pairs | null;
  view: IncidentView;
  onApplied: (v: IncidentView) => void;
  onBusy: (busy: boolean) => void;
}) {
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error>();
  const [steps, setSteps] = useState<IncidentStep[]>(view.steps ?? []);
  const [current, setCurrent] = useState<number>();
  const [progress, setProgress] = useState<{ partition: string; done: number; partitions: number; released: number; remaining: number }>();
  const blocked = (view.migrations ?? []).find((m) => m.missing);
  const submit = async (e: Event) => {
    e.preventDefault();
    if (!reason.trim()) {
      setError(new Error('A reason is required: it is kept with the containment, the notice waiver and the backfill'));
      return;
    }
    setBusy(true);
    onBusy(true);
    setError(undefined);
    // The steps as planned now: the plan may have been reloaded since the form appeared.
    setSteps(view.steps ?? []);
    setCurrent(0);
    try {
      for await (const ev of stream<ApplyEvent>('POST', path(subject, ':apply'), body(pairs, reason.trim()))) {
        if ('step' in ev) {
          const { index, step } = ev.step;
          setSteps((old) => old.map((x, i) => (i === index ? step : x)));
          setCurrent(index + 1);
        } else if ('progress' in ev) {
          setProgress(ev.progress);
        } else if ('incident' in ev) {
          onApplied(ev.incident);
        }
      }
    } catch (err) {
      setError(err as Error);
    } finally {
      setBusy(false);
      onBusy(false);
    }
  };
  return (
    <form class="incident-form" onSubmit={submit} data-testid="apply-form">
      <h2>Apply the fix</h2>
      <p>
        The steps run in order and stop at the first that fails; each is safe to run again. The reason is kept with the containment, the notice waiver and the
        backfill.
      </p>
      {blocked ? <p class="text-bad">{blocked.missing}</p> : null}
      <label class="field">
        <span>Reason</span>
        <input
          type="text"
          name="reason"
          value={reason}
          placeholder="INC-8: customer_id arrives as UUIDs"
          aria-required="true"
          disabled={busy}
          onInput={(e) => setReason((e.target as HTMLInputElement).value)}
        />
      </label>
      <button type="submit" class="btn btn-danger" disabled={busy}>
        {busy ? 'Applying…' : `Apply ${(view.steps ?? []).filter((x) => !x.done).length} steps`}
      </button>
      <ErrorBox error={error} what="The fix stopped" />
      {busy ? (
        <div role="status" aria-live="polite" data-testid="apply-progress">
          <Steps steps={steps} current={current} />
          {progress ? (
            <p>
              Replay: {progress.partition} done ({progress.done} of {progress.partitions} partitions), {int(progress.released)} released, {int(progress.remaining)}{' '}
              still held
              <progress max={progress.partitions} value={progress.done} />
            </p>
          ) : null}
        </div>
      ) : null}
    </form>
  );
}

function Outcome({ view }: { view: IncidentView }) {
  const r = view.reconciliation;
  return (
    <div class="incident-outcome" data-testid="incident-outcome" role="status">
      <h2>What the fix did</h2>
      <p class="muted">The plan it carried out follows below.</p>
      {view.error ? <div class="error">{view.error}</div> : null}
      <Steps steps={view.steps ?? []} />
      {r ? (
        <>
          <p data-testid="reconciliation">
            <strong>
              Reconciliation of {r.from === r.to ? r.from : `${r.from}..${r.to}`}: held before {int(r.held_before)} = released {int(r.released)} + still held{' '}
              {int(r.still_held)}
            </strong>{' '}
            {r.adds_up ? <Badge tone="ok">adds up</Badge> : <Badge tone="bad">{int(r.held_before - r.released - r.still_held)} unaccounted</Badge>}
          </p>
          <p>
            Match rate after the fix:{' '}
            {Object.entries(r.match_rate_after ?? {})
              .map(([p, v]) => `${p} ${rate(v)}`)
              .join(', ') || '–'}
          </p>
          {view.replay?.rerun_consumers?.length ? <p>Consumers to rerun, in order: {view.replay.rerun_consumers.join(' → ')}</p> : null}
          <ul class="incident-list">
            {(r.alerts_after ?? []).map((a) => (
              <li key={a.sequence}>
                #{a.sequence} {a.partition} {a.kind} {a.field ?? ''}: {a.state}
                {a.resolved_by ? ` by ${a.resolved_by}` : ''}
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </div>
  );
}
