// The header's live indicator: whether this tab is following the server's
// stream, and a way to reconnect now when it is not.
import { reconnectNow, useLiveState } from '../live';
import { useNow } from '../hooks';

export function LiveIndicator() {
  const s = useLiveState();
  const now = useNow(1000);
  const wait = s.retryAt ? Math.max(0, Math.ceil((s.retryAt - now) / 1000)) : 0;
  const text =
    s.status === 'live'
      ? 'live'
      : s.status === 'polling'
        ? 'polling'
        : s.status === 'retrying'
          ? `reconnecting${wait ? ` in ${wait}s` : ''}`
          : s.status === 'connecting'
            ? 'connecting'
            : 'offline';
  const title =
    s.status === 'live'
      ? `Following the server's event stream (last event #${s.last}): pages update as things change.`
      : s.status === 'polling'
        ? 'This process serves no registry, so no event stream: pages reload every few seconds.'
        : s.status === 'retrying'
          ? `The event stream dropped${s.error ? ` (${s.error})` : ''}; pages may be behind until it is back.`
          : 'Connecting to the event stream.';
  return (
    <div class={`live live-${s.status}`} data-testid="live" data-status={s.status} role="status" aria-live="polite" title={title}>
      <span class="live-dot" aria-hidden="true" />
      <span class="live-text">{text}</span>
      {s.status === 'retrying' ? (
        <button type="button" class="btn btn-small" onClick={reconnectNow}>
          Reconnect
        </button>
      ) : null}
    </div>
  );
}
