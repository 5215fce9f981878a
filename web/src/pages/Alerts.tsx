// Alerts and events: the alert inbox, where an operator acknowledges and
// resolves alerts, and the registry's event stream. Both follow the tab's
// one stream (live.ts): an alert raised, acknowledged or resolved anywhere
// (here, the CLI, the gate itself) reloads the inbox, and every event is
// added to the list as it comes.
import { useEffect, useState } from 'preact/hooks';
import { api, M, SERVICES } from '../api';
import * as data from '../data';
import { dbl, num } from '../types';
import type { Alert, RegistryEvent } from '../types';
import { boundOf, enumName, int, pct } from '../format';
import { useAsync } from '../hooks';
import { onLive, useLiveReload, useLiveState, type LiveStatus } from '../live';
import { href, navigate } from '../router';
import { useSession } from '../session';
import { Badge, Confirm, Empty, ErrorBox, Head, Loading, Severity, Time } from '../components/ui';

const KEEP_EVENTS = 300;

/** STATES are the state filter's choices; "holding" is open and acknowledged. */
const STATES = ['all', 'holding', 'open', 'acknowledged', 'resolved'] as const;
type StateFilter = (typeof STATES)[number];

function stateOf(a: Alert): string {
  return enumName(a.state, 'ALERT_STATE_').toLowerCase();
}

export function matchesState(a: Alert, f: StateFilter): boolean {
  const st = stateOf(a);
  if (f === 'all') return true;
  if (f === 'holding') return st !== 'resolved';
  return st === f;
}

function LiveBadge({ state }: { state: LiveStatus }) {
  const tone = state === 'live' || state === 'polling' ? 'ok' : state === 'retrying' ? 'warn' : 'muted';
  return (
    <Badge tone={tone} title="kept current by the server's event stream">
      {state === 'live' ? '● live' : state}
    </Badge>
  );
}

/** AckReason is why an alert was acknowledged, from its registry event. */
interface FilterProps {
  label: string;
  value: string;
  options: readonly string[];
  /** all offers "all" (the empty value) before the options. */
  all?: boolean;
  text?: (option: string) => string;
  testid?: string;
  onPick: (value: string) => void;
}

/** Filter is one of the alert list's filters: a labelled select. */
function Filter({ label, value, options, all, text = (x) => x, testid, onPick }: FilterProps) {
  return (
    <label class="field-inline">
      <span>{label}</span>
      <select value={value} data-testid={testid} onChange={(e) => onPick((e.target as HTMLSelectElement).value)}>
        {all ? <option value="">all</option> : null}
        {options.map((x) => (
          <option key={x} value={x}>
            {text(x)}
          </option>
        ))}
      </select>
    </label>
  );
}

function ackReasons(events: RegistryEvent[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of events) {
    if (e.type === 'EVENT_TYPE_ALERT_ACKNOWLEDGED' && e.attributes?.alert_sequence && e.attributes.reason) {
      out.set(e.attributes.alert_sequence, e.attributes.reason);
    }
  }
  return out;
}

export function AlertsPage({ params }: { params: URLSearchParams }) {
  const s = useSession();
  const subject = params.get('subject') ?? '';
  const severity = params.get('severity') ?? '';
  const kind = params.get('kind') ?? '';
  const state = (STATES as readonly string[]).includes(params.get('state') ?? '') ? (params.get('state') as StateFilter) : 'all';
  const set = (patch: Record<string, string>) => navigate(href('alerts', { subject, severity, kind, state: state === 'all' ? '' : state, ...patch }), true);
  const hasGate = s.serves(SERVICES.gate);
  const hasRegistry = s.serves(SERVICES.registry);
  const live = useLiveState();
  const [acting, setActing] = useState<{ alert: Alert; action: 'acknowledge' | 'resolve' } | null>(null);

  const alerts = useAsync((signal) => (hasGate ? data.alerts(subject || undefined, signal) : Promise.resolve([] as Alert[])), [subject, hasGate]);
  useLiveReload(alerts.reload, ['alerts', 'partitions'], subject || undefined);

  // The events: what the log holds, then each one the tab's stream brings.
  const [events, setEvents] = useState<RegistryEvent[]>([]);
  const [eventsError, setEventsError] = useState<Error>();
  const [eventsLoaded, setEventsLoaded] = useState(false);
  useEffect(() => {
    if (!hasRegistry) return;
    const ctl = new AbortController();
    let last = 0;
    const pending: RegistryEvent[] = [];
    let loaded = false;
    const add = (xs: RegistryEvent[]) => {
      const fresh = xs.filter((e) => num(e.sequence) > last);
      if (!fresh.length) return;
      last = num(fresh[fresh.length - 1].sequence);
      setEvents((cur) => [...cur, ...fresh].slice(-KEEP_EVENTS));
    };
    const off = onLive((e) => {
      if (!e || (subject && e.subject !== subject)) return;
      if (loaded) add([e]);
      else pending.push(e);
    });
    setEvents([]);
    setEventsLoaded(false);
    data.events({ subjects: subject ? [subject] : undefined }, ctl.signal).then(
      (r) => {
        loaded = true;
        setEventsLoaded(true);
        add(r.events.slice(-KEEP_EVENTS));
        add(pending);
      },
      (e: Error) => {
        if (e.name !== 'AbortError') setEventsError(e);
      },
    );
    return () => {
      off();
      ctl.abort();
    };
  }, [subject, hasRegistry]);

  const all = alerts.data ?? [];
  const reasons = ackReasons(events);
  const shown = all
    .filter((a) => (!severity || a.severity === severity) && (!kind || a.kind === kind) && matchesState(a, state))
    .slice()
    .reverse();
  const kinds = [...new Set(all.map((a) => a.kind ?? ''))].filter(Boolean).sort();
  const subjects = [...new Set(all.map((a) => a.subject ?? ''))].filter(Boolean).sort();
  const canAck = s.can(M.acknowledgeAlert);
  const canResolve = s.can(M.resolveAlert);

  return (
    <section aria-labelledby="alerts-title">
      <div class="page-head">
        <h1 id="alerts-title">Alerts and events</h1>
      </div>
      <div class="split">
        {hasGate ? (
          <div>
            <h2>
              Alerts <LiveBadge state={live.status} />
            </h2>
            <form class="inline-form filters" onSubmit={(e) => e.preventDefault()} aria-label="Filter alerts">
              <Filter label="State" value={state} testid="state-filter" options={STATES} text={(x) => (x === 'holding' ? 'open or acknowledged' : x)} onPick={(x) => set({ state: x })} />
              <Filter label="Subject" value={subject} all options={[...new Set([...subjects, subject].filter(Boolean))]} onPick={(x) => set({ subject: x })} />
              <Filter
                label="Severity"
                value={severity}
                all
                options={['SEVERITY_CRITICAL', 'SEVERITY_WARNING', 'SEVERITY_INFO']}
                text={(x) => enumName(x, 'SEVERITY_').toLowerCase()}
                onPick={(x) => set({ severity: x })}
              />
              <Filter label="Kind" value={kind} all options={kinds} onPick={(x) => set({ kind: x })} />
            </form>
            <ErrorBox error={alerts.error} what="Could not load the alerts" />
            {alerts.loading && !alerts.data ? <Loading what="alerts" /> : null}
            {alerts.data && shown.length === 0 ? (
              <Empty>
                No {state === 'all' ? '' : `${state === 'holding' ? 'open or acknowledged' : state} `}alert{subject ? ` for ${subject}` : ''}.
              </Empty>
            ) : null}
            {shown.length > 0 ? (
              <table class="table table-compact table-cards" data-testid="alerts-table">
                <caption>
                  {int(shown.length)} alert{shown.length === 1 ? '' : 's'}, newest first
                </caption>
                <Head columns={['#', 'When', 'Severity', 'What', 'Where', 'State']} />
                <tbody>
                  {shown.map((a) => {
                    const obs = dbl(a.observed);
                    const st = stateOf(a);
                    const bound = boundOf(a.message);
                    const ackWhy = reasons.get(String(a.sequence));
                    return (
                      <tr key={String(a.sequence)} data-alert={String(a.sequence)} data-state={st}>
                        <td data-label="#">{a.sequence}</td>
                        <td data-label="When">
                          <Time ts={a.time} />
                        </td>
                        <td data-label="Severity">
                          <Severity value={a.severity} />
                        </td>
                        <td class="cell-wrap" data-label="What">
                          <strong>{a.kind}</strong> <span class="muted">{a.check}</span>
                          <div>{a.message}</div>
                          {a.kind === 'MATCH_RATE' && Number.isFinite(obs) ? (
                            <div class="muted" data-testid="observed">
                              observed {pct(obs, 1, bound)}
                              {bound !== undefined ? ` against ${pct(bound, 0)}` : ''}
                            </div>
                          ) : null}
                        </td>
                        <td class="nowrap" data-label="Where">
                          <a href={href(`sources/${a.subject}`)}>{a.subject}</a>
                          <div>
                            <a href={href('quarantine', { subject: a.subject, from: a.partition, to: a.partition })}>{a.partition}</a>
                          </div>
                        </td>
                        <td class="cell-wrap" data-label="State" data-testid="alert-state">
                          <Badge tone={st === 'resolved' ? 'ok' : st === 'acknowledged' ? 'info' : 'warn'}>{st}</Badge>
                          {a.acknowledged_by ? (
                            <div class="who-why" data-testid="acked">
                              acknowledged by <strong>{a.acknowledged_by}</strong> <Time ts={a.acknowledge_time} />
                              {ackWhy ? <div class="why">“{ackWhy}”</div> : null}
                            </div>
                          ) : null}
                          {a.resolved_by ? (
                            <div class="who-why" data-testid="resolved">
                              resolved by <strong>{a.resolved_by}</strong> <Time ts={a.resolve_time} />
                              {a.resolution ? <div class="why">“{a.resolution}”</div> : null}
                            </div>
                          ) : null}
                          {(canAck && st === 'open') || (canResolve && st !== 'resolved') ? (
                            <div class="row-actions">
                              {canAck && st === 'open' ? (
                                <button type="button" class="btn btn-small" onClick={() => setActing({ alert: a, action: 'acknowledge' })}>
                                  Acknowledge…
                                </button>
                              ) : null}
                              {canResolve && st !== 'resolved' ? (
                                <button type="button" class="btn btn-small" onClick={() => setActing({ alert: a, action: 'resolve' })}>
                                  Resolve…
                                </button>
                              ) : null}
                            </div>
                          ) : null}
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            ) : null}
          </div>
        ) : null}
        {hasRegistry ? (
          <div>
            <h2>
              Registry events <LiveBadge state={live.status} />
            </h2>
            <ErrorBox error={eventsError} what="Could not load the events" />
            {events.length === 0 && eventsLoaded ? <Empty>No event yet.</Empty> : null}
            <ol class="events" reversed data-testid="events-list" aria-live="polite" aria-relevant="additions">
              {events
                .slice()
                .reverse()
                .map((e) => (
                  <li key={String(e.sequence)} class={`event event-${(e.type ?? '').toLowerCase()}`}>
                    <div class="event-head">
                      <span class="event-seq">#{e.sequence}</span> <strong>{enumName(e.type, 'EVENT_TYPE_')}</strong>{' '}
                      {e.subject ? <a href={href(`sources/${e.subject}`)}>{e.subject}</a> : null}
                      {e.version ? ` v${e.version}` : ''} <Time ts={e.time} />
                    </div>
                    <div class="event-msg">{e.message}</div>
                    {e.consumers?.length ? <div class="muted">consumers: {e.consumers.join(' → ')}</div> : null}
                  </li>
                ))}
            </ol>
          </div>
        ) : null}
      </div>
      {acting ? (
        <Confirm
          title={`${acting.action === 'acknowledge' ? 'Acknowledge' : 'Resolve'} alert #${acting.alert.sequence}`}
          confirmLabel={acting.action === 'acknowledge' ? 'Acknowledge' : 'Resolve'}
          reason={{
            label: 'Reason',
            placeholder: acting.action === 'acknowledge' ? 'asked the fleet team' : 'drivers log in by e-mail now; v3 declares it',
          }}
          onConfirm={async (reason) => {
            await api.post(`/v1/alerts/${encodeURIComponent(String(acting.alert.sequence))}:${acting.action}`, { reason });
            alerts.reload();
          }}
          onClose={() => setActing(null)}
        >
          <p>
            <strong>{acting.alert.kind}</strong> on {acting.alert.subject} partition {acting.alert.partition}: {acting.alert.message}
          </p>
          <p class="muted">
            {acting.action === 'acknowledge'
              ? 'Says someone is on it. It still holds and stays listed as holding until resolved. The reason goes to the audit trail and the event stream.'
              : 'Says it no longer needs attention. The reason is kept on the alert, in the audit trail and in the event stream.'}
          </p>
        </Confirm>
      ) : null}
    </section>
  );
}
