// A source: its partitions over time, its versions and audit, the diff
// between any two versions, and the blast radius of a change to it.
import { useMemo, useState } from 'preact/hooks';
import { api, M, SERVICES } from '../api';
import * as data from '../data';
import { enumName, int, pct } from '../format';
import { useAsync } from '../hooks';
import { useLiveReload } from '../live';
import { buildGraph } from '../lineage';
import { href, navigate } from '../router';
import { buildRows, parseMatchRateChecks, summarize, type PartitionRow } from '../series';
import { useSession } from '../session';
import type { Alert, Change, Containment, ContractVersion, RegistryEvent, Subject } from '../types';
import { AuditTable, Badge, Confirm, Countdown, Empty, ErrorBox, Head, Loading, numCol, Time } from '../components/ui';
import { LineageGraph } from '../components/LineageGraph';
import { CurrentIncident } from '../components/CurrentIncident';
import { countsPlot, matchRatePlot, Plot } from '../components/Plot';
import { verdictOf } from './Sources';

const TABS = [
  { id: 'partitions', label: 'Partitions', needs: SERVICES.gate },
  { id: 'versions', label: 'Versions & audit', needs: SERVICES.registry },
  { id: 'diff', label: 'Diff', needs: SERVICES.registry },
  { id: 'lineage', label: 'Blast radius', needs: SERVICES.registry },
] as const;

type Tab = (typeof TABS)[number]['id'];

export function SourcePage({ subject, params }: { subject: string; params: URLSearchParams }) {
  const s = useSession();
  const tabs = TABS.filter((t) => s.serves(t.needs));
  const tab = (tabs.find((t) => t.id === params.get('tab'))?.id ?? tabs[0]?.id) as Tab | undefined;
  const head = useAsync(
    async (signal) => {
      const [subjects, containments] = await Promise.all([
        s.serves(SERVICES.registry) ? data.subjects(signal) : Promise.resolve([] as Subject[]),
        s.serves(SERVICES.gate) ? data.containments(signal) : Promise.resolve([] as Containment[]),
      ]);
      return { subject: subjects.find((x) => x.name === subject), containment: containments.find((c) => c.subject === subject) };
    },
    [subject],
  );
  useLiveReload(head.reload, ['containment', 'versions'], subject);
  const [dialog, setDialog] = useState<'contain' | 'release' | null>(null);
  const contained = head.data?.containment?.contained ?? false;
  const info = head.data?.subject;

  return (
    <section aria-labelledby="source-title">
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href={href('')}>Sources</a> / <span aria-current="page">{subject}</span>
      </nav>
      <div class="page-head">
        <h1 id="source-title">{subject}</h1>
        <div class="head-facts">
          {info ? (
            <>
              <span>owner {info.owner ?? '–'}</span>
              <span>active v{info.active_version ?? '–'}</span>
              <span>latest v{info.latest_version ?? '–'}</span>
              <span>{enumName(info.compatibility, 'COMPATIBILITY_')}</span>
              <span>notice {info.notice_period ?? '–'}</span>
            </>
          ) : null}
          {s.serves(SERVICES.gate) ? (
            contained ? (
              <Badge tone="bad" title={head.data?.containment?.reason}>
                contained by {head.data?.containment?.principal}: {head.data?.containment?.reason}
              </Badge>
            ) : (
              <Badge tone="ok">flowing</Badge>
            )
          ) : null}
        </div>
        <div class="actions">
          {s.serves(SERVICES.gate) ? (
            <a class="btn" href={href('quarantine', { subject })}>
              Quarantine
            </a>
          ) : null}
          {s.serves(SERVICES.gate) && s.serves(SERVICES.registry) ? (
            <a class="btn" href={href(`incident/${subject}`)}>
              Incident
            </a>
          ) : null}
          {!contained && s.can(M.contain) ? (
            <button class="btn btn-danger" type="button" onClick={() => setDialog('contain')}>
              Contain…
            </button>
          ) : null}
          {contained && s.can(M.release) ? (
            <button class="btn" type="button" onClick={() => setDialog('release')}>
              Release…
            </button>
          ) : null}
        </div>
      </div>
      <ErrorBox error={head.error} what="Could not load the source" />
      {head.data && s.serves(SERVICES.registry) && !info ? <p class="note">The registry has no subject named {subject}.</p> : null}
      {dialog === 'contain' ? (
        <Confirm
          title={`Contain ${subject}`}
          confirmLabel="Contain"
          danger
          reason={{ label: 'Reason', placeholder: 'INC-8: customer_id arrives as UUIDs' }}
          onConfirm={async (reason) => {
            await api.post(`/v1/subjects/${encodeURIComponent(subject)}:contain`, { subject, reason });
            head.reload();
          }}
          onClose={() => setDialog(null)}
        >
          <p>Everything {subject} sends from now on goes to quarantine instead of downstream, until the source is released. Nothing is lost: held records can be replayed after the fix.</p>
        </Confirm>
      ) : null}
      {dialog === 'release' ? (
        <Confirm
          title={`Release ${subject}`}
          confirmLabel="Release"
          reason={{ label: 'Reason', placeholder: 'v2 with a uuid→int migration is active' }}
          onConfirm={async (reason) => {
            await api.post(`/v1/subjects/${encodeURIComponent(subject)}:release`, { subject, reason });
            head.reload();
          }}
          onClose={() => setDialog(null)}
        >
          <p>What {subject} sends is judged by its contract again. Records held while it was contained stay in quarantine until replayed.</p>
        </Confirm>
      ) : null}
      {s.serves(SERVICES.gate) ? <CurrentIncident subject={subject} /> : null}
      <nav class="tabs" aria-label="Views of this source">
        {tabs.map((t) => (
          <a key={t.id} href={href(`sources/${subject}`, { tab: t.id })} aria-current={t.id === tab ? 'page' : undefined} class="tab">
            {t.label}
          </a>
        ))}
      </nav>
      {tab === 'partitions' ? <Partitions subject={subject} /> : null}
      {tab === 'versions' ? <Versions subject={subject} /> : null}
      {tab === 'diff' ? <Diff subject={subject} params={params} /> : null}
      {tab === 'lineage' ? <BlastRadius subject={subject} /> : null}
    </section>
  );
}

function Partitions({ subject }: { subject: string }) {
  const s = useSession();
  const res = useAsync(
    async (signal) => {
      const hasRegistry = s.serves(SERVICES.registry);
      const [parts, alerts, events, active] = await Promise.all([
        data.monitor(subject, signal),
        data.alerts(subject, signal),
        hasRegistry
          ? data.events({ subjects: [subject], types: ['EVENT_TYPE_BACKFILL_COMPLETED'] }, signal).then((r) => r.events)
          : Promise.resolve([] as RegistryEvent[]),
        hasRegistry
          ? api.get<{ version?: ContractVersion }>(`/v1/subjects/${encodeURIComponent(subject)}/contract`, undefined, signal).then(
              (r) => r.version,
              () => undefined,
            )
          : Promise.resolve(undefined),
      ]);
      const check = parseMatchRateChecks(active?.contract?.checks)[0];
      return { rows: buildRows(parts, alerts, events, { window: check?.window }), check, alerts };
    },
    [subject],
  );
  useLiveReload(res.reload, ['partitions', 'alerts', 'backfills', 'versions'], subject);
  const plots = useMemo(() => {
    if (!res.data) return null;
    return { counts: countsPlot(res.data.rows), rate: matchRatePlot(res.data.rows, res.data.check?.min) };
  }, [res.data]);
  if (res.error) return <ErrorBox error={res.error} what="Could not load the partitions" />;
  if (!res.data || !plots) return <Loading what="partitions" />;
  const { rows, check } = res.data;
  if (rows.length === 0) return <Empty>No partition of {subject} has been received yet.</Empty>;
  // What a partition holds back now: a backfill's releases no longer count.
  const heldBack = (r: PartitionRow) => Math.max(0, r.quarantined - r.released) + r.blocked;
  const worst = rows.reduce((a, r) => (heldBack(r) >= heldBack(a) ? r : a), rows[0]);
  return (
    <div>
      <Plot
        id="counts-plot"
        title="Records per partition"
        caption={`${rows.length} partitions from ${rows[0].partition} to ${rows[rows.length - 1].partition}; most held back now on ${worst.partition}: ${int(Math.max(0, worst.quarantined - worst.released))} still quarantined, ${int(worst.blocked)} blocked of ${int(worst.received)} received.`}
        opts={plots.counts.opts}
        data={plots.counts.data}
      />
      <Plot
        id="match-rate-plot"
        title={`Match rate${check ? ` of ${check.field}` : ''}`}
        caption={summarize(rows, check?.field)}
        opts={plots.rate.opts}
        data={plots.rate.data}
      />
      <p class="legend-note">
        Bars stack what each partition received: accepted, quarantined, blocked. The shaded band is the match rate's baseline, mean ± 3σ of the{' '}
        {check?.window ?? 7} partitions before each one. The solid line is the match rate now; the dashed red line is where a backfilled partition stood before its
        backfill (the rate its sealed verdict or MATCH_RATE alert judged). Markers: ⚠ alerts, ↺ backfills.
      </p>
      <PartitionTable subject={subject} rows={rows} floor={check?.min} />
    </div>
  );
}

function PartitionTable({ subject, rows, floor }: { subject: string; rows: PartitionRow[]; floor?: number }) {
  return (
    <table class="table table-compact table-scroll" data-testid="partitions-table">
      <caption>Partitions of {subject}</caption>
      <Head
        columns={[
          'Partition',
          numCol('Received'),
          numCol('Accepted'),
          numCol('Quarantined'),
          numCol('Blocked'),
          numCol('Released'),
          numCol('Match rate now'),
          numCol('When judged'),
          numCol('Baseline'),
          'Verdict',
          'Alerts and backfills',
        ]}
      />
      <tbody>
        {[...rows].reverse().map((r) => {
          const v = verdictOf({
            partition: r.partition,
            received: r.received,
            quarantined: r.quarantined,
            blocked: r.blocked,
            released: r.released,
            verdict: r.verdict,
            status: r.status,
          });
          const low = r.baseline && r.judged !== null && r.judged < r.baseline.low;
          return (
            <tr key={r.partition} data-partition={r.partition}>
              <th scope="row" class="nowrap">
                <a href={href(`partition/${subject}/${r.partition}`)} title="This partition's checks, amendments and resend">
                  {r.partition}
                </a>
              </th>
              <td class="num">{int(r.received)}</td>
              <td class="num">{int(r.accepted)}</td>
              <td class="num">{int(r.quarantined)}</td>
              <td class="num">{int(r.blocked)}</td>
              <td class="num">{int(r.released)}</td>
              <td class="num" data-col="rate-now">
                {pct(r.matchRate, 1, floor)}
              </td>
              <td class={`num ${low ? 'cell-bad' : ''}`} data-col="rate-judged" title={r.judgedBy}>
                {r.judged === null ? '–' : pct(r.judged, 1, floor)}
              </td>
              <td class="num nowrap">{r.baseline ? `${pct(r.baseline.mean)} ± ${((r.baseline.high - r.baseline.mean) * 100).toFixed(1)}` : '–'}</td>
              <td>
                <Badge tone={v.tone} title={v.title}>
                  {v.text}
                </Badge>
              </td>
              <td class="cell-wrap">
                {r.alerts.map((a: Alert) => (
                  <div key={String(a.sequence)} class={a.severity === 'SEVERITY_CRITICAL' ? 'text-bad' : 'text-warn'}>
                    ⚠ {a.kind}
                  </div>
                ))}
                {r.backfills.map((e) => (
                  <div key={String(e.sequence)} class="text-info" title={e.attributes?.reason ? `reason: ${e.attributes.reason}` : undefined}>
                    ↺ backfill, {e.attributes?.released ?? '?'} released (event #{e.sequence})
                  </div>
                ))}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function changesSummary(v: ContractVersion): string {
  const ch = v.changes ?? [];
  const b = ch.filter((c) => c.level === 'CHANGE_LEVEL_BREAKING').length;
  const a = ch.length - b;
  if (ch.length === 0) return v.version === 1 ? 'first version' : 'no changes';
  return [b ? `${b} breaking` : '', a ? `${a} additive` : ''].filter(Boolean).join(', ');
}

function Versions({ subject }: { subject: string }) {
  const res = useAsync(async (signal) => {
    const [versions, history] = await Promise.all([data.versions(subject, signal), data.history(subject, signal)]);
    return { versions, history };
  }, [subject]);
  useLiveReload(res.reload, ['versions', 'containment', 'alerts'], subject);
  const [shown, setShown] = useState<number | null>(null);
  if (res.error) return <ErrorBox error={res.error} what="Could not load the versions" />;
  if (!res.data) return <Loading what="versions" />;
  const { versions, history } = res.data;
  const contract = versions.find((v) => v.version === shown) ?? versions.find((v) => v.status === 'VERSION_STATUS_ACTIVE');
  return (
    <div>
      <h2>Version history</h2>
      <table class="table" data-testid="versions-table">
        <Head columns={['Version', 'Status', 'Effective', 'Registered', 'By', 'Changes', 'Notice waived', 'Fingerprint']} />
        <tbody>
          {[...versions].reverse().map((v) => (
            <tr key={v.version}>
              <th scope="row">
                <button type="button" class="link" onClick={() => setShown(v.version)} aria-pressed={contract?.version === v.version}>
                  v{v.version}
                </button>
              </th>
              <td>
                <Badge tone={v.status === 'VERSION_STATUS_ACTIVE' ? 'ok' : v.status === 'VERSION_STATUS_SCHEDULED' ? 'info' : 'muted'}>
                  {enumName(v.status, 'VERSION_STATUS_')}
                </Badge>
              </td>
              <td>
                <Time ts={v.effective_time} />
                {v.status === 'VERSION_STATUS_SCHEDULED' ? (
                  <div>
                    <Countdown ts={v.effective_time} />
                  </div>
                ) : null}
              </td>
              <td>
                <Time ts={v.create_time} />
              </td>
              <td>{v.author ?? '–'}</td>
              <td>
                {v.breaking ? <Badge tone="warn">breaking</Badge> : null} {changesSummary(v)}
                {v.version > 1 ? (
                  <>
                    {' '}
                    <a href={href(`sources/${subject}`, { tab: 'diff', from: v.version - 1, to: v.version })}>diff</a>
                  </>
                ) : null}
              </td>
              <td>{v.override?.reason ? `${v.override.reason} (${v.override_by ?? '?'})` : '–'}</td>
              <td>
                <code>{(v.fingerprint ?? '').slice(0, 12)}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {contract?.contract ? (
        <details class="contract" open={shown !== null}>
          <summary>
            Contract v{contract.version}: {contract.contract.fields?.length ?? 0} fields, {contract.contract.checks?.length ?? 0} checks
          </summary>
          <div class="two-col">
            <table class="table table-compact">
              <caption>Fields</caption>
              <Head columns={['Field', 'Type', 'Required', 'Identifier']} />
              <tbody>
                {(contract.contract.fields ?? []).map((f) => (
                  <tr key={f.name}>
                    <th scope="row">
                      {f.name}
                      {f.key ? ' 🔑' : ''}
                    </th>
                    <td>{enumName(f.type, 'FIELD_TYPE_')}</td>
                    <td>{f.required ? 'yes' : ''}</td>
                    <td>{f.identifier ? `${f.identifier.namespace}/${f.identifier.format}` : ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            <table class="table table-compact">
              <caption>Checks</caption>
              <Head columns={['Check', 'Rule', 'Policy']} />
              <tbody>
                {(contract.contract.checks ?? []).map((c) => (
                  <tr key={c.name}>
                    <th scope="row">{c.name}</th>
                    <td>
                      <code>{c.rule}</code>
                    </td>
                    <td>{enumName(c.policy, 'POLICY_')}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </details>
      ) : null}
      <h2>Audit history</h2>
      <AuditTable
        records={history}
        empty="No recorded action."
        testid="audit-table"
        rowClass={(e) => (e.action === 'NOTICE_OVERRIDE' ? 'row-warn' : '')}
        columns={[
          ['Action', (e) => e.action],
          ['Version', (e) => (e.version ? `v${e.version}` : '')],
        ]}
      />
    </div>
  );
}

function Diff({ subject, params }: { subject: string; params: URLSearchParams }) {
  const vs = useAsync((signal) => data.versions(subject, signal), [subject]);
  const latest = vs.data?.length ? vs.data[vs.data.length - 1].version : 0;
  const f = Number(params.get('from')) || Math.max(1, latest - 1);
  const t = Number(params.get('to')) || latest;
  // The pair lives in the URL, so a diff can be linked to.
  const pick = (from: number, to: number) => navigate(href(`sources/${subject}`, { tab: 'diff', from, to }), true);
  const diff = useAsync(
    async (signal) => {
      if (!latest || f === t) return null;
      return api.get<{ changes?: Change[]; breaking?: boolean }>(
        `/v1/subjects/${encodeURIComponent(subject)}/diff`,
        { from_version: f, to_version: t },
        signal,
      );
    },
    [subject, f, t, latest],
  );
  if (vs.error) return <ErrorBox error={vs.error} what="Could not load the versions" />;
  if (!vs.data) return <Loading what="versions" />;
  if (vs.data.length < 2) return <Empty>{subject} has only one version: nothing to compare yet.</Empty>;
  const opts = vs.data.map((v) => (
    <option key={v.version} value={v.version}>
      v{v.version} ({enumName(v.status, 'VERSION_STATUS_').toLowerCase()})
    </option>
  ));
  const changes = diff.data?.changes ?? [];
  return (
    <div>
      <form class="inline-form" onSubmit={(e) => e.preventDefault()}>
        <label class="field-inline">
          <span>From</span>
          <select value={f} onChange={(e) => pick(Number((e.target as HTMLSelectElement).value), t)}>
            {opts}
          </select>
        </label>
        <label class="field-inline">
          <span>to</span>
          <select value={t} onChange={(e) => pick(f, Number((e.target as HTMLSelectElement).value))}>
            {opts}
          </select>
        </label>
        {diff.data ? (
          diff.data.breaking ? (
            <Badge tone="bad">breaking</Badge>
          ) : (
            <Badge tone="ok">additive</Badge>
          )
        ) : null}
      </form>
      <ErrorBox error={diff.error} what="Could not compare the versions" />
      {f === t ? <Empty>Pick two different versions.</Empty> : null}
      {diff.data && changes.length === 0 ? <Empty>No difference between v{f} and v{t}.</Empty> : null}
      {changes.length > 0 ? (
        <table class="table" data-testid="diff-table">
          <caption>
            v{f} → v{t}: {changes.length} change{changes.length === 1 ? '' : 's'}
          </caption>
          <Head columns={['Level', 'Rule', 'Path', 'Old', 'New', 'Why']} />
          <tbody>
            {changes.map((c, i) => (
              <tr key={i} class={c.level === 'CHANGE_LEVEL_BREAKING' ? 'row-bad' : ''}>
                <td>
                  <Badge tone={c.level === 'CHANGE_LEVEL_BREAKING' ? 'bad' : 'ok'}>{enumName(c.level, 'CHANGE_LEVEL_')}</Badge>
                </td>
                <td>
                  <code>{c.rule}</code>
                </td>
                <td>
                  <code>{c.path}</code>
                </td>
                <td class="cell-code">{c.old_value ?? ''}</td>
                <td class="cell-code">{c.new_value ?? ''}</td>
                <td class="cell-wrap">{c.message}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </div>
  );
}

function BlastRadius({ subject }: { subject: string }) {
  const res = useAsync(
    async (signal) => {
      const [affected, consumers, order] = await Promise.all([
        data.blastRadius(subject, signal),
        data.consumers(signal),
        data.rerunOrder(subject, signal),
      ]);
      return { affected, order, graph: buildGraph(subject, affected, consumers, order) };
    },
    [subject],
  );
  if (res.error) return <ErrorBox error={res.error} what="Could not load the blast radius" />;
  if (!res.data) return <Loading what="lineage" />;
  const { affected, order, graph } = res.data;
  if (affected.length === 0) return <Empty>No consumer reads {subject}: a change to it reaches no one that declared lineage.</Empty>;
  return (
    <div>
      <p>
        A change to {subject} reaches {affected.length} consumer{affected.length === 1 ? '' : 's'}. Left to right is dependency order: after a backfill, rerun them in
        the numbered order.
      </p>
      {graph.cycle ? <p class="error">The lineage has a cycle through {graph.cycle}: the order below cannot be trusted.</p> : null}
      <LineageGraph graph={graph} />
      <div class="two-col">
        <div>
          <h2>Rerun order</h2>
          <ol data-testid="rerun-order">
            {order.map((c) => (
              <li key={c}>{c}</li>
            ))}
          </ol>
        </div>
        <table class="table table-compact">
          <caption>Affected consumers</caption>
          <Head columns={['Consumer', 'Depth', 'Via', 'Usage', 'Owner']} />
          <tbody>
            {affected.map((a) => (
              <tr key={a.consumer}>
                <th scope="row">{a.consumer}</th>
                <td>{a.depth ?? 1}</td>
                <td class="cell-wrap">{(a.path ?? []).join(' → ')}</td>
                <td>{(a.usages ?? []).map((u) => enumName(u, 'USAGE_KIND_').toLowerCase()).join(', ')}</td>
                <td>{a.owner ?? '–'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
