// The banner a source's page leads with: what is going wrong now (the
// newest partition BLOCKED or with an alert still open), not the worst
// day of its history, which a backfill may have repaired long ago.
import * as data from '../data';
import { useAsync } from '../hooks';
import { currentIncident } from '../incident';
import { useLiveReload } from '../live';
import { href } from '../router';
import { Badge } from './ui';
import '../pages/incident.css';

export function CurrentIncident({ subject }: { subject: string }) {
  const res = useAsync(
    async (signal) => {
      const [parts, alerts] = await Promise.all([data.monitor(subject, signal), data.alerts(subject, signal)]);
      return currentIncident(parts, alerts);
    },
    [subject],
  );
  // The banner follows the stream: a partition sealed BLOCKED, an alert
  // raised or resolved, a backfill, all change what is wrong now.
  useLiveReload(res.reload, ['partitions', 'alerts', 'backfills'], subject);
  if (res.error || !res.data) {
    return res.data === null ? (
      <p class="now now-ok" data-testid="current-incident">
        <Badge tone="ok">now</Badge> No partition of {subject} is blocked and no alert of it is open.
      </p>
    ) : null;
  }
  const c = res.data;
  const kinds = [...new Set(c.alerts.map((a) => a.kind ?? 'alert'))];
  return (
    <div class={`now now-${c.tone}`} role="status" data-testid="current-incident" data-partition={c.partition}>
      <Badge tone={c.tone}>now</Badge>{' '}
      <strong>
        Partition <a href={href(`partition/${subject}/${c.partition}`)}>{c.partition}</a> {c.blocked ? 'is BLOCKED' : 'has open alerts'}
      </strong>
      {kinds.length ? `: ${kinds.join(', ')}` : ''}. <a href={href(`partition/${subject}/${c.partition}`)}>{c.blocked ? 'Why, and resend it' : 'Its checks'}</a>
      {' · '}
      <a href={href(`incident/${subject}`)}>Incident view and fix</a>
    </div>
  );
}
