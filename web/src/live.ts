// Live: one server stream per tab keeps every page current. The registry's
// event log is that stream: the gate reports into it every partition it
// seals, every alert raised, acknowledged or resolved, every containment
// change and backfill, and the registry adds contract versions. The console
// watches it once (GET /v1/events:watch), from the newest event on, and
// each page names the events that change what it shows and reloads on
// them. A dropped stream is resumed after the last event seen, with
// backoff; once back, every page reloads, since what it shows may have
// changed meanwhile. A process that does not serve the registry has no
// stream: pages then reload every POLL_MS.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, stream } from './api';
import type { RegistryEvent } from './types';
import { num } from './types';

/** Status of the tab's stream. */
export type LiveStatus = 'connecting' | 'live' | 'retrying' | 'polling' | 'stopped';

export interface LiveState {
  status: LiveStatus;
  /** last is the sequence of the newest event seen. */
  last: number;
  /** retryAt is when the next attempt starts (ms since the epoch), while retrying. */
  retryAt?: number;
  error?: string;
}

/**
 * A signal is an event of the log, or null: "anything may have changed"
 * (the stream came back after a gap, or a poll tick).
 */
export type LiveSignal = RegistryEvent | null;

/** POLL_MS is how often pages reload where no stream is served. */
export const POLL_MS = 4000;
/** DEBOUNCE_MS gathers a burst of events (a replay re-sealing days) into one reload. */
export const DEBOUNCE_MS = 250;
const MAX_BACKOFF_MS = 15000;

type Listener = (s: LiveSignal) => void;

const listeners = new Set<Listener>();
const stateListeners = new Set<(s: LiveState) => void>();
let state: LiveState = { status: 'stopped', last: 0 };
let ctl: AbortController | null = null;
let wakeRetry: (() => void) | null = null;

function setState(patch: Partial<LiveState>): void {
  state = { ...state, ...patch };
  stateListeners.forEach((fn) => fn(state));
}

function emit(s: LiveSignal): void {
  listeners.forEach((fn) => {
    try {
      fn(s);
    } catch (e) {
      // One page's failure must not stop the others from hearing.
      console.error('live listener failed', e);
    }
  });
}

/**
 * head reads the sequence of the newest event: a list filtered to a type no
 * event has examines the whole log and answers the last sequence examined.
 */
async function head(signal: AbortSignal): Promise<number> {
  const r = await api.get<{ last_sequence?: string }>('/v1/events', { types: 'EVENT_TYPE_UNSPECIFIED', limit: 1 }, signal);
  return num(r.last_sequence);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      wakeRetry = null;
      signal.removeEventListener('abort', done);
      resolve();
    }
    wakeRetry = done;
    signal.addEventListener('abort', done);
  });
}

/**
 * startLive starts the tab's stream (or, without a registry, the poll) and
 * returns what stops it. Starting again stops the previous one.
 */
export function startLive(opts: { registry: boolean }): () => void {
  stopLive();
  const c = new AbortController();
  ctl = c;
  const signal = c.signal;
  if (!opts.registry) {
    setState({ status: 'polling', retryAt: undefined, error: undefined });
    const id = setInterval(() => emit(null), POLL_MS);
    signal.addEventListener('abort', () => clearInterval(id));
    return () => stopLive(c);
  }
  (async () => {
    let delay = 500;
    let gap = false;
    setState({ status: 'connecting', retryAt: undefined, error: undefined });
    while (!signal.aborted) {
      try {
        if (state.last === 0) setState({ last: await head(signal) });
        const opened = () => {
          setState({ status: 'live', retryAt: undefined, error: undefined });
          delay = 500;
          if (gap) {
            gap = false;
            emit(null);
          }
        };
        // The gateway sends a stream's headers with its first message, so
        // the watch starts one event back: the newest event seen comes
        // again at once, proves the stream open, and is skipped.
        const from = Math.max(0, state.last - 1);
        for await (const m of stream<{ event?: RegistryEvent }>('GET', `/v1/events:watch?after_sequence=${from}`, undefined, signal, opened)) {
          const e = m.event;
          if (!e) continue;
          const seq = num(e.sequence);
          if (seq <= state.last) continue;
          setState({ last: seq });
          emit(e);
        }
        throw new Error('the event stream ended');
      } catch (e) {
        if (signal.aborted) break;
        gap = true;
        const retryAt = Date.now() + delay;
        setState({ status: 'retrying', retryAt, error: (e as Error).message });
        await sleep(delay, signal);
        delay = Math.min(delay * 2, MAX_BACKOFF_MS);
        if (!signal.aborted) setState({ status: 'connecting', retryAt: undefined });
      }
    }
  })();
  return () => stopLive(c);
}

function stopLive(which?: AbortController): void {
  if (!ctl || (which && which !== ctl)) return;
  ctl.abort();
  ctl = null;
  wakeRetry = null;
  setState({ status: 'stopped', retryAt: undefined, last: 0 });
}

/** reconnectNow cuts the wait of a stream that is retrying. */
export function reconnectNow(): void {
  wakeRetry?.();
}

/** onLive calls fn with each signal of the tab's stream until the returned function is called. */
export function onLive(fn: Listener): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

/** useLiveState follows the state of the tab's stream. */
export function useLiveState(): LiveState {
  const [s, set] = useState(state);
  useEffect(() => {
    stateListeners.add(set);
    set(state);
    return () => {
      stateListeners.delete(set);
    };
  }, []);
  return s;
}

/** Kinds of change a page may show; see affects. */
export type Concern = 'partitions' | 'alerts' | 'containment' | 'versions' | 'backfills' | 'consumers';

const CONCERNS: Record<string, Concern[]> = {
  EVENT_TYPE_PARTITION_SEALED: ['partitions'],
  EVENT_TYPE_ALERT_RAISED: ['alerts'],
  EVENT_TYPE_ALERT_ACKNOWLEDGED: ['alerts'],
  EVENT_TYPE_ALERT_RESOLVED: ['alerts'],
  EVENT_TYPE_UNANNOUNCED_CHANGE: ['alerts'],
  EVENT_TYPE_SOURCE_CONTAINED: ['containment'],
  EVENT_TYPE_SOURCE_RELEASED: ['containment'],
  EVENT_TYPE_BACKFILL_COMPLETED: ['backfills', 'partitions'],
  EVENT_TYPE_VERSION_REGISTERED: ['versions'],
  EVENT_TYPE_CHANGE_ANNOUNCED: ['versions'],
  EVENT_TYPE_VERSION_ACTIVATED: ['versions'],
  EVENT_TYPE_VERSION_DEPRECATED: ['versions'],
  EVENT_TYPE_VERSION_RETIRED: ['versions'],
  EVENT_TYPE_ACTIVATION_HELD: ['versions'],
  EVENT_TYPE_CANONICAL_MODEL_REGISTERED: ['versions'],
  EVENT_TYPE_CONSUMER_REGISTERED: ['consumers'],
};

/**
 * affects says whether a signal may change what a page shows: one of its
 * concerns, about its subject (or any subject when it names none). A null
 * signal (a gap, a poll) affects every page.
 */
export function affects(s: LiveSignal, concerns: Concern[], subject?: string): boolean {
  if (s === null) return true;
  if (subject && s.subject && s.subject !== subject) return false;
  const of = CONCERNS[s.type ?? ''] ?? [];
  return of.some((c) => concerns.includes(c));
}

/**
 * useLiveReload calls reload when a signal affects what the page shows,
 * once per burst (DEBOUNCE_MS).
 */
export function useLiveReload(reload: () => void, concerns: Concern[], subject?: string): void {
  const reloadRef = useRef(reload);
  reloadRef.current = reload;
  const key = concerns.join(',');
  useEffect(() => {
    let t: ReturnType<typeof setTimeout> | undefined;
    const off = onLive((s) => {
      if (!affects(s, concerns, subject)) return;
      if (t === undefined) {
        t = setTimeout(() => {
          t = undefined;
          reloadRef.current();
        }, DEBOUNCE_MS);
      }
    });
    return () => {
      off();
      if (t !== undefined) clearTimeout(t);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key, subject]);
}

/**
 * useLivePoll reloads, every ms while the tab is visible, a page whose
 * changes are not in the stream (idmap reports no events), and after a
 * gap in the stream like every page.
 */
export function useLivePoll(reload: () => void, ms = POLL_MS): void {
  const reloadRef = useRef(reload);
  reloadRef.current = reload;
  useEffect(() => {
    const id = setInterval(() => {
      if (document.visibilityState === 'visible') reloadRef.current();
    }, ms);
    const off = onLive((s) => {
      if (s === null) reloadRef.current();
    });
    return () => {
      clearInterval(id);
      off();
    };
  }, [ms]);
}
