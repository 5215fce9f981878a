// The REST API's JSON, as grpc-gateway renders Seam's protos: proto field
// names, enums by name, 64-bit integers as strings, and every field left
// out when it holds its zero value. Only what the console reads is typed;
// fields other branches are adding (partition verdicts, alert states) are
// optional so pages render them when they are present.

/** A 64-bit integer: protojson sends it as a string. */
export type Int64 = string | number;

/** num reads an Int64 (or a missing one) as a number. */
export function num(v: Int64 | undefined | null): number {
  if (v === undefined || v === null || v === '') return 0;
  return typeof v === 'number' ? v : Number(v);
}

/** JSON numbers may be "NaN" or "Infinity" strings in protojson. */
export type Double = number | string;

export function dbl(v: Double | undefined | null): number {
  if (v === undefined || v === null) return 0;
  return typeof v === 'number' ? v : Number(v);
}

export interface WhoAmI {
  name: string;
  roles: string[];
  subjects?: string[];
  services: string[];
  methods: string[];
}

// Registry.

export interface Subject {
  name: string;
  owner?: string;
  compatibility?: string;
  notice_period?: string;
  latest_version?: number;
  active_version?: number;
  create_time?: string;
}

export interface Change {
  rule?: string;
  path?: string;
  old_value?: string;
  new_value?: string;
  level?: string;
  message?: string;
  compared_version?: number;
}

export interface ContractCheck {
  name?: string;
  rule?: string;
  policy?: string;
  description?: string;
}

export interface ContractField {
  name: string;
  type?: string;
  required?: boolean;
  key?: boolean;
  identifier?: { namespace?: string; format?: string };
}

export interface Contract {
  subject?: string;
  owner?: string;
  description?: string;
  fields?: ContractField[];
  checks?: ContractCheck[];
}

export interface ContractVersion {
  subject: string;
  version: number;
  contract?: Contract;
  status?: string;
  create_time?: string;
  effective_time?: string;
  author?: string;
  changes?: Change[];
  breaking?: boolean;
  override?: { reason?: string };
  override_by?: string;
  fingerprint?: string;
}

export interface AuditEntry {
  sequence: Int64;
  time?: string;
  principal?: string;
  action?: string;
  version?: number;
  detail?: string;
}

export interface AffectedConsumer {
  consumer: string;
  path?: string[];
  depth?: number;
  fields?: string[];
  usages?: string[];
  owner?: string;
}

export interface ConsumerInput {
  subject?: string;
  dataset?: string;
  fields?: string[];
  usage?: string;
}

export interface Consumer {
  name: string;
  owner?: string;
  description?: string;
  inputs?: ConsumerInput[];
  produces?: string[];
}

export interface RegistryEvent {
  sequence: Int64;
  type?: string;
  time?: string;
  subject?: string;
  version?: number;
  principal?: string;
  message?: string;
  consumers?: string[];
  changes?: Change[];
  effective_time?: string;
  partition_from?: string;
  partition_to?: string;
  attributes?: Record<string, string>;
}

// Gate.

export interface Alert {
  sequence: Int64;
  time?: string;
  subject?: string;
  partition?: string;
  check?: string;
  severity?: string;
  message?: string;
  observed?: Double;
  baseline?: Double;
  field?: string;
  kind?: string;
  count?: Int64;
  first_seen?: string;
  batch_id?: string;
  /** The alert lifecycle: ALERT_STATE_OPEN, _ACKNOWLEDGED or _RESOLVED. */
  state?: string;
  acknowledged_by?: string;
  acknowledge_time?: string;
  resolved_by?: string;
  /** resolution says why it was resolved. */
  resolution?: string;
  resolve_time?: string;
  amendment?: number;
}

export interface Containment {
  subject: string;
  contained?: boolean;
  reason?: string;
  principal?: string;
  time?: string;
  automatic?: boolean;
}

export interface FieldMonitor {
  field: string;
  count?: Int64;
  nulls?: Int64;
  mean?: Double;
  id_checked?: Int64;
  id_matched?: Int64;
}

export interface PartitionMonitor {
  subject?: string;
  partition: string;
  received?: Int64;
  accepted?: Int64;
  quarantined?: Int64;
  blocked?: Int64;
  released?: Int64;
  match_rate?: Double;
  batches?: Int64;
  update_time?: string;
  fields?: FieldMonitor[];
  /** Partition lifecycle (OPEN, SEALED) and verdict, once sealing exists. */
  status?: string;
  verdict?: string;
}

/** A sealed partition's judgment, as GetPartition answers once it exists. */
export interface PartitionVerdict {
  partition: string;
  status?: string;
  verdict?: string;
  match_rate?: Double;
}

export interface RecordError {
  code?: string;
  field?: string;
  message?: string;
  check?: string;
}

export interface QuarantinedRecord {
  id: string;
  subject?: string;
  partition?: string;
  batch_id?: string;
  index?: Int64;
  position?: Int64;
  contract_version?: number;
  format?: string;
  /** The record's bytes as received, base64. */
  raw?: string;
  reasons?: RecordError[];
  time?: string;
  state?: string;
  state_time?: string;
  state_reason?: string;
  state_by?: string;
}

export interface QuarantineFilter {
  subject?: string;
  partition_from?: string;
  partition_to?: string;
  reason?: string;
  check?: string;
  contract_version?: number;
  state?: string;
}

export interface QuarantineCount {
  key: string;
  count?: Int64;
}

export interface QuarantineStats {
  total?: Int64;
  by_reason?: QuarantineCount[];
  by_check?: QuarantineCount[];
  by_partition?: QuarantineCount[];
}

export interface ReplayWindow {
  subject: string;
  partition_from: string;
  partition_to: string;
  contract_version?: number;
}

export interface PartitionPlan {
  partition: string;
  held?: Int64;
  would_release?: Int64;
  would_remain?: Int64;
}

export interface ReplayPlan {
  held?: Int64;
  would_release?: Int64;
  would_remain?: Int64;
  remain_reasons?: QuarantineCount[];
  partitions?: PartitionPlan[];
}

export interface ReplaySummary {
  replay_id?: string;
  held?: Int64;
  released?: Int64;
  remaining?: Int64;
  partitions?: Int64;
  rerun_consumers?: string[];
  event_sequence?: Int64;
}

// idmap.

export interface IdFormat {
  name: string;
  kind?: string;
  pattern?: string;
  description?: string;
}

export interface IdRule {
  from_format?: string;
  to_format?: string;
  template?: { template?: string };
  uuid_embed?: { prefix?: string };
  uuid_v5?: { namespace_uuid?: string };
  normalize?: { case?: string; trim_space?: boolean };
  lookup?: Record<string, never>;
  reversible?: boolean;
}

export interface TableInfo {
  from_format?: string;
  to_format?: string;
  pairs?: Int64;
  generation?: Int64;
  update_time?: string;
}

export interface Namespace {
  name: string;
  description?: string;
  formats?: IdFormat[];
  rules?: IdRule[];
  tables?: TableInfo[];
  create_time?: string;
}

export interface IdCounter {
  namespace?: string;
  from_format?: string;
  to_format?: string;
  hits?: Int64;
  misses?: Int64;
  invalid?: Int64;
}

export interface IdAudit {
  sequence: Int64;
  time?: string;
  principal?: string;
  namespace?: string;
  action?: string;
  detail?: string;
}

export interface TranslateResult {
  values?: string[];
  statuses?: string[];
  hits?: Int64;
  misses?: Int64;
  invalid?: Int64;
}
