// Alerts and events: the alert inbox, kept current by the gate's alert
// stream, and the registry's event stream, live.
import { useEffect, useRef, useState } from 'preact/hooks';
import { SERVICES, stream } from '../api';
import * as data from '../data';
import { dbl, num } from '../types';
import type { Alert, RegistryEvent } from '../types';
import { enumName, int } from '../format';
import { href, navigate } from '../router';
import { useSession } from '../session';
import { Badge, Empty, ErrorBox, Loading, Severity, Time } from '../components/ui';

const KEEP_EVENTS = 300;

type Live = 'connecting' | 'live' | 'retrying' | 'stopped';

/**
 * useLive keeps a list loaded once and then extended by a server stream,
 * reconnecting with backoff from the last sequence it saw, so nothing is
 * missed or shown twice.
 */
function useLive<T extends { sequence: string | number }>(
  load: (signal: AbortSignal) => Promise<{ items: T[]; last: number }>,
  watch: (after: number, signal: AbortSignal) => AsyncGenerator<T>,
  keep: number,
  deps: unknown[],
): { items: T[]; state: Live; error?: Error } {
  const [items, setItems] = useState<T[]>([]);
  const [state, setState] = useState<Live>('connecting');
  const [error, setError] = useState<Error>();
  const loadRef = useRef(load);
  const watchRef = useRef(watch);
  loadRef.current = load;
  watchRef.current = watch;
  useEffect(() => {
    const ctl = new AbortController();
    let after = 0;
    let delay = 500;
    (async () => {
      try {
        const first = await loadRef.current(ctl.signal);
        setItems(first.items.slice(-keep));
        after = first.last;
      } catch (e) {
        if ((e as Error).name === 'AbortError') return;
        setError(e as Error);
      }
      while (!ctl.signal.aborted) {
        try {
          setState('live');
          for await (const item of watchRef.current(after, ctl.signal)) {
            const seq = num(item.sequence);
            if (seq <= after) continue;
            after = seq;
            delay = 500;
            setError(undefined);
            setItems((xs) => [...xs, item].slice(-keep));
          }
        } catch (e) {
          if ((e as Error).name === 'AbortError' || ctl.signal.aborted) break;
          setError(e as Error);
        }
        if (ctl.signal.aborted) break;
        setState('retrying');
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 15000);
      }
      setState('stopped');
    })();
    return () => ctl.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
  return { items, state, error };
}

function LiveBadge({ state }: { state: Live }) {
  const tone = state === 'live' ? 'ok' : state === 'retrying' ? 'warn' : 'muted';
  return (
    <Badge tone={tone} title="streamed from the server as it happens">
      {state === 'live' ? '● live' : state}
    </Badge>
  );
}

export function AlertsPage({ params }: { params: URLSearchParams }) {
  const s = useSession();
  const subject = params.get('subject') ?? '';
  const severity = params.get('severity') ?? '';
  const kind = params.get('kind') ?? '';
  const set = (patch: Record<string, string>) => navigate(href('alerts', { subject, severity, kind, ...patch }), true);
  const hasGate = s.serves(SERVICES.gate);
  const hasRegistry = s.serves(SERVICES.registry);

  const alerts = useLive<Alert>(
    async (signal) => {
      if (!hasGate) return { items: [], last: 0 };
      const items = await data.alerts(subject || undefined, signal);
      return { items, last: items.length ? num(items[items.length - 1].sequence) : 0 };
    },
    async function* (after, signal) {
      if (!hasGate) return;
      for await (const m of stream<{ alert?: Alert }>('GET', `/v1/alerts:watch?after_sequence=${after}${subject ? `&subject=${encodeURIComponent(subject)}` : ''}`, undefined, signal)) {
        if (m.alert) yield m.alert;
      }
    },
    100000,
    [subject, hasGate],
  );
  const events = useLive<RegistryEvent>(
    async (signal) => {
      if (!hasRegistry) return { items: [], last: 0 };
      const r = await data.events({ subjects: subject ? [subject] : undefined }, signal);
      return { items: r.events, last: r.last };
    },
    async function* (after, signal) {
      if (!hasRegistry) return;
      for await (const m of stream<{ event?: RegistryEvent }>('GET', `/v1/events:watch?after_sequence=${after}${subject ? `&subjects=${encodeURIComponent(subject)}` : ''}`, undefined, signal)) {
        if (m.event) yield m.event;
      }
    },
    KEEP_EVENTS,
    [subject, hasRegistry],
  );

  const shown = alerts.items
    .filter((a) => (!severity || a.severity === severity) && (!kind || a.kind === kind))
    .slice()
    .reverse();
  const kinds = [...new Set(alerts.items.map((a) => a.kind ?? ''))].filter(Boolean).sort();
  const subjects = [...new Set(alerts.items.map((a) => a.subject ?? ''))].filter(Boolean).sort();
  const hasState = alerts.items.some((a) => a.state);

  return (
    <section aria-labelledby="alerts-title">
      <div class="page-head">
        <h1 id="alerts-title">Alerts and events</h1>
      </div>
      <div class="split">
        {hasGate ? (
          <div>
            <h2>
              Alerts <LiveBadge state={alerts.state} />
            </h2>
            <form class="inline-form" onSubmit={(e) => e.preventDefault()} aria-label="Filter alerts">
              <label class="field-inline">
                <span>Subject</span>
                <select value={subject} onChange={(e) => set({ subject: (e.target as HTMLSelectElement).value })}>
                  <option value="">all</option>
                  {[...new Set([...subjects, subject].filter(Boolean))].map((x) => (
                    <option key={x} value={x}>
                      {x}
                    </option>
                  ))}
                </select>
              </label>
              <label class="field-inline">
                <span>Severity</span>
                <select value={severity} onChange={(e) => set({ severity: (e.target as HTMLSelectElement).value })}>
                  <option value="">all</option>
                  {['SEVERITY_CRITICAL', 'SEVERITY_WARNING', 'SEVERITY_INFO'].map((x) => (
                    <option key={x} value={x}>
                      {enumName(x, 'SEVERITY_').toLowerCase()}
                    </option>
                  ))}
                </select>
              </label>
              <label class="field-inline">
                <span>Kind</span>
                <select value={kind} onChange={(e) => set({ kind: (e.target as HTMLSelectElement).value })}>
                  <option value="">all</option>
                  {kinds.map((x) => (
                    <option key={x} value={x}>
                      {x}
                    </option>
                  ))}
                </select>
              </label>
            </form>
            <ErrorBox error={alerts.error} what="Alert stream" />
            {alerts.state === 'connecting' && alerts.items.length === 0 ? <Loading what="alerts" /> : null}
            {alerts.state !== 'connecting' && shown.length === 0 ? <Empty>No alert{subject ? ` for ${subject}` : ''}.</Empty> : null}
            {shown.length > 0 ? (
              <table class="table table-compact" data-testid="alerts-table">
                <caption>
                  {int(shown.length)} alert{shown.length === 1 ? '' : 's'}, newest first
                </caption>
                <thead>
                  <tr>
                    <th scope="col">#</th>
                    <th scope="col">When</th>
                    <th scope="col">Severity</th>
                    <th scope="col">What</th>
                    <th scope="col">Where</th>
                    {hasState ? <th scope="col">State</th> : null}
                  </tr>
                </thead>
                <tbody>
                  {shown.map((a) => {
                    const obs = dbl(a.observed);
                    return (
                      <tr key={String(a.sequence)}>
                        <td>{a.sequence}</td>
                        <td>
                          <Time ts={a.time} />
                        </td>
                        <td>
                          <Severity value={a.severity} />
                        </td>
                        <td class="cell-wrap">
                          <strong>{a.kind}</strong> <span class="muted">{a.check}</span>
                          <div>{a.message}</div>
                          {a.kind === 'MATCH_RATE' && Number.isFinite(obs) ? <div class="muted">observed {(obs * 100).toFixed(1)}%</div> : null}
                        </td>
                        <td class="nowrap">
                          <a href={href(`sources/${a.subject}`)}>{a.subject}</a>
                          <div>
                            <a href={href('quarantine', { subject: a.subject, from: a.partition, to: a.partition })}>{a.partition}</a>
                          </div>
                        </td>
                        {hasState ? <td>{enumName(a.state, 'ALERT_STATE_').toLowerCase()}</td> : null}
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
              Registry events <LiveBadge state={events.state} />
            </h2>
            <ErrorBox error={events.error} what="Event stream" />
            {events.items.length === 0 && events.state !== 'connecting' ? <Empty>No event yet.</Empty> : null}
            <ol class="events" reversed data-testid="events-list" aria-live="polite" aria-relevant="additions">
              {events.items
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
    </section>
  );
}
