// Loaders for what several pages read. Every one is a plain REST call (or
// a few pages of one); nothing here knows more than a REST client would.
import { api } from './api';
import type {
  AffectedConsumer,
  Alert,
  AuditEntry,
  Consumer,
  Containment,
  ContractVersion,
  PartitionMonitor,
  QuarantineFilter,
  QuarantineStats,
  RegistryEvent,
  Subject,
} from './types';
import { num } from './types';

const PAGE = 1000;
/** MAX_PAGES bounds how much history one page load reads. */
const MAX_PAGES = 20;

export async function subjects(signal?: AbortSignal): Promise<Subject[]> {
  const r = await api.get<{ subjects?: Subject[] }>('/v1/subjects', undefined, signal);
  return r.subjects ?? [];
}

export async function containments(signal?: AbortSignal): Promise<Containment[]> {
  const r = await api.get<{ containments?: Containment[] }>('/v1/containments', undefined, signal);
  return r.containments ?? [];
}

/** alerts reads the alerts (of one subject, or all), oldest first. */
export async function alerts(subject: string | undefined, signal?: AbortSignal): Promise<Alert[]> {
  const out: Alert[] = [];
  let after = 0;
  for (let page = 0; page < MAX_PAGES; page++) {
    const r = await api.get<{ alerts?: Alert[] }>('/v1/alerts', { subject, after_sequence: after, limit: PAGE }, signal);
    const batch = r.alerts ?? [];
    out.push(...batch);
    if (batch.length < PAGE) break;
    after = num(batch[batch.length - 1].sequence);
  }
  return out;
}

/**
 * isOpen says whether an alert is not resolved yet (open or acknowledged);
 * the gate resolves an alert a replay or a later partition no longer
 * upholds, and an operator may resolve one by hand.
 */
export function isOpen(a: Alert): boolean {
  return !a.state || !/RESOLVED$/.test(a.state);
}

/** events reads registry events of some subjects and types, oldest first. */
export async function events(opts: { subjects?: string[]; types?: string[] }, signal?: AbortSignal): Promise<{ events: RegistryEvent[]; last: number }> {
  const out: RegistryEvent[] = [];
  let after = 0;
  for (let page = 0; page < MAX_PAGES; page++) {
    const r = await api.get<{ events?: RegistryEvent[]; last_sequence?: string }>(
      '/v1/events',
      { after_sequence: after, subjects: opts.subjects, types: opts.types, limit: PAGE },
      signal,
    );
    const batch = r.events ?? [];
    out.push(...batch);
    const last = num(r.last_sequence);
    if (batch.length < PAGE || last <= after) return { events: out, last };
    after = last;
  }
  return { events: out, last: after };
}

export async function versions(subject: string, signal?: AbortSignal): Promise<ContractVersion[]> {
  const r = await api.get<{ versions?: ContractVersion[] }>(`/v1/subjects/${encodeURIComponent(subject)}/versions`, undefined, signal);
  return r.versions ?? [];
}

export async function history(subject: string, signal?: AbortSignal): Promise<AuditEntry[]> {
  const r = await api.get<{ entries?: AuditEntry[] }>(`/v1/subjects/${encodeURIComponent(subject)}/history`, undefined, signal);
  return r.entries ?? [];
}

export async function monitor(subject: string, signal?: AbortSignal, from?: string, to?: string): Promise<PartitionMonitor[]> {
  const r = await api.get<{ partitions?: PartitionMonitor[] }>(
    `/v1/subjects/${encodeURIComponent(subject)}/monitor`,
    { partition_from: from, partition_to: to },
    signal,
  );
  return r.partitions ?? [];
}

export async function blastRadius(subject: string, signal?: AbortSignal): Promise<AffectedConsumer[]> {
  const r = await api.post<{ consumers?: AffectedConsumer[] }>(`/v1/subjects/${encodeURIComponent(subject)}:blastRadius`, {}, signal);
  return r.consumers ?? [];
}

export async function consumers(signal?: AbortSignal): Promise<Consumer[]> {
  const r = await api.get<{ consumers?: Consumer[] }>('/v1/consumers', undefined, signal);
  return r.consumers ?? [];
}

export async function rerunOrder(subject: string, signal?: AbortSignal): Promise<string[]> {
  const r = await api.get<{ consumers?: string[] }>('/v1/rerun-order', { subject }, signal);
  return r.consumers ?? [];
}

export async function quarantineStats(filter: QuarantineFilter, signal?: AbortSignal): Promise<QuarantineStats> {
  return api.post<QuarantineStats>('/v1/quarantine:stats', { filter }, signal);
}
