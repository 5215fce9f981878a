// Sources: every subject and its state at a glance.
import { useState } from 'preact/hooks';
import { SERVICES } from '../api';
import * as data from '../data';
import { enumName, int, pct } from '../format';
import { useAsync } from '../hooks';
import { useLiveReload } from '../live';
import { href, navigate } from '../router';
import { parseMatchRateChecks } from '../series';
import { useSession } from '../session';
import type { Alert, Containment, ContractVersion, PartitionMonitor, Subject } from '../types';
import { dbl, num } from '../types';
import { Badge, Countdown, Empty, ErrorBox, Head, Loading, numCol, Sparkline } from '../components/ui';

interface SourceRow {
  name: string;
  subject?: Subject;
  scheduled: ContractVersion[];
  floor?: number;
  containment?: Containment;
  openAlerts: Alert[];
  partitions: PartitionMonitor[];
  error?: Error;
}

const SPARK = 14;

export function verdictOf(p: PartitionMonitor): { tone: 'ok' | 'warn' | 'bad' | 'muted'; text: string; title: string } {
  if (p.verdict) {
    const v = enumName(p.verdict, 'PARTITION_VERDICT_');
    const tone = v === 'BLOCKED' ? 'bad' : v.includes('ALERT') ? 'warn' : 'ok';
    return { tone, text: v, title: `sealed verdict${p.status ? ` (${enumName(p.status, 'PARTITION_STATUS_')})` : ''}` };
  }
  const received = num(p.received);
  const q = num(p.quarantined);
  const b = num(p.blocked);
  const title = 'counted so far; a sealed verdict appears once the gate seals partitions';
  if (b > 0) return { tone: 'bad', text: `${int(b)} blocked`, title };
  if (received === 0) return { tone: 'muted', text: 'nothing yet', title };
  const released = num(p.released);
  if (q > 0) return { tone: 'warn', text: `${pct(q / received)} quarantined${released ? `, ${int(released)} released` : ''}`, title };
  return { tone: 'ok', text: 'all accepted', title };
}

export function SourcesPage() {
  const s = useSession();
  const hasRegistry = s.serves(SERVICES.registry);
  const hasGate = s.serves(SERVICES.gate);
  const [open, setOpen] = useState('');
  const rows = useAsync(
    async (signal): Promise<SourceRow[]> => {
      const [subjects, containments, alerts] = await Promise.all([
        hasRegistry ? data.subjects(signal) : Promise.resolve([] as Subject[]),
        hasGate ? data.containments(signal) : Promise.resolve([] as Containment[]),
        hasGate ? data.alerts(undefined, signal) : Promise.resolve([] as Alert[]),
      ]);
      const names = new Set(subjects.map((x) => x.name));
      if (!hasRegistry) {
        // A gate on its own knows subjects by what it contained or alerted on.
        containments.forEach((c) => names.add(c.subject));
        alerts.forEach((a) => a.subject && names.add(a.subject));
      }
      const bySubject = new Map(subjects.map((x) => [x.name, x]));
      return Promise.all(
        [...names].sort().map(async (name): Promise<SourceRow> => {
          const row: SourceRow = {
            name,
            subject: bySubject.get(name),
            scheduled: [],
            containment: containments.find((c) => c.subject === name),
            openAlerts: alerts.filter((a) => a.subject === name && data.isOpen(a)),
            partitions: [],
          };
          try {
            const [versions, partitions] = await Promise.all([
              hasRegistry ? data.versions(name, signal) : Promise.resolve([] as ContractVersion[]),
              hasGate ? data.monitor(name, signal) : Promise.resolve([] as PartitionMonitor[]),
            ]);
            row.scheduled = versions.filter((v) => v.status === 'VERSION_STATUS_SCHEDULED');
            const active = versions.find((v) => v.status === 'VERSION_STATUS_ACTIVE');
            row.floor = parseMatchRateChecks(active?.contract?.checks)[0]?.min;
            row.partitions = partitions;
          } catch (e) {
            row.error = e as Error;
          }
          return row;
        }),
      );
    },
    [hasRegistry, hasGate],
  );
  useLiveReload(rows.reload, ['partitions', 'alerts', 'containment', 'versions', 'backfills']);

  return (
    <section aria-labelledby="sources-title">
      <div class="page-head">
        <h1 id="sources-title">Sources</h1>
        <form
          class="inline-form"
          onSubmit={(e) => {
            e.preventDefault();
            if (open.trim()) navigate(href(`sources/${open.trim()}`));
          }}
        >
          <label class="field-inline">
            <span>Open a subject</span>
            <input type="text" value={open} placeholder="shop.orders" onInput={(e) => setOpen((e.target as HTMLInputElement).value)} />
          </label>
          <button class="btn" type="submit">
            Open
          </button>
          <button class="btn" type="button" onClick={rows.reload} disabled={rows.loading}>
            Refresh
          </button>
        </form>
      </div>
      {!hasRegistry ? <p class="note">This process does not serve the registry: subjects are those the gate has contained or alerted on.</p> : null}
      <ErrorBox error={rows.error} what="Could not load the sources" />
      {rows.loading && !rows.data ? <Loading what="sources" /> : null}
      {rows.data && rows.data.length === 0 ? <Empty>No subject is registered yet. Register a contract with `seam contract register -f contract.yaml`.</Empty> : null}
      {rows.data && rows.data.length > 0 ? (
        <table class="table table-cards" data-testid="sources-table">
          <Head
            columns={[
              'Source',
              'Owner',
              'Active',
              'Scheduled',
              'Contained',
              { label: 'Open alerts', title: 'Alerts not yet resolved (every alert, until alerts can be resolved)' },
              'Latest partition',
              'Verdict',
              numCol('Match rate'),
              { label: `Last ${SPARK} partitions`, title: 'Match rate of the last partitions; a partition repaired by a backfill shows the rate its alert saw' },
            ]}
          />
          <tbody>
            {rows.data.map((r) => {
              const latest = r.partitions[r.partitions.length - 1];
              const critical = r.openAlerts.filter((a) => a.severity === 'SEVERITY_CRITICAL').length;
              const v = latest ? verdictOf(latest) : null;
              const rate = latest ? dbl(latest.match_rate) : -1;
              return (
                <tr key={r.name} data-subject={r.name}>
                  <th scope="row" data-label="Source">
                    <a href={href(`sources/${r.name}`)}>{r.name}</a>
                    {r.error ? <div class="error-inline">{r.error.message}</div> : null}
                  </th>
                  <td data-label="Owner">{r.subject?.owner ?? '–'}</td>
                  <td data-label="Active">{r.subject?.active_version ? `v${r.subject.active_version}` : '–'}</td>
                  <td data-label="Scheduled">
                    {r.scheduled.length === 0
                      ? '–'
                      : r.scheduled.map((sv) => (
                          <div key={sv.version}>
                            v{sv.version} {sv.breaking ? <Badge tone="warn">breaking</Badge> : null} <Countdown ts={sv.effective_time} />
                          </div>
                        ))}
                  </td>
                  <td data-testid="contained" data-label="Contained">
                    {r.containment?.contained ? (
                      <Badge tone="bad" title={`${r.containment.reason ?? ''} (by ${r.containment.principal ?? '?'})`}>
                        contained{r.containment.automatic ? ' (auto)' : ''}
                      </Badge>
                    ) : (
                      <Badge tone="ok">flowing</Badge>
                    )}
                  </td>
                  <td data-testid="open-alerts" data-label="Open alerts">
                    {r.openAlerts.length === 0 ? (
                      '0'
                    ) : (
                      <a href={href('alerts', { subject: r.name })}>
                        {r.openAlerts.length}
                        {critical ? (
                          <>
                            {' '}
                            <Badge tone="bad">{critical} critical</Badge>
                          </>
                        ) : null}
                      </a>
                    )}
                  </td>
                  <td data-label="Latest partition" data-testid="latest-partition">
                    {latest?.partition ?? '–'}
                  </td>
                  <td data-label="Verdict" data-testid="verdict">
                    {v ? (
                      <Badge tone={v.tone} title={v.title}>
                        {v.text}
                      </Badge>
                    ) : (
                      '–'
                    )}
                  </td>
                  <td class="num" data-testid="match-rate" data-label="Match rate">
                    {rate >= 0 ? pct(rate, 1, r.floor) : '–'}
                  </td>
                  <td data-label={`Last ${SPARK}`}>
                    {r.partitions.length ? (
                      <Sparkline
                        values={r.partitions.slice(-SPARK).map((p) => {
                          // The lower of the rate now and the rate its MATCH_RATE alert saw,
                          // so a partition repaired by a backfill still shows its drop.
                          const x = dbl(p.match_rate);
                          const seen = r.openAlerts
                            .filter((a) => a.partition === p.partition && a.kind === 'MATCH_RATE')
                            .map((a) => dbl(a.observed))
                            .filter((v) => Number.isFinite(v));
                          return x < 0 ? null : Math.min(x, ...seen);
                        })}
                        low={r.floor}
                        labels={r.partitions.slice(-SPARK).map((p) => p.partition)}
                        verdicts={r.partitions.slice(-SPARK).map((p) => enumName(p.verdict, 'PARTITION_VERDICT_'))}
                      />
                    ) : (
                      '–'
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}
