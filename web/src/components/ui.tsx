// Small building blocks shared by the pages.
import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from '../api';
import { countdown, enumName, pct, time } from '../format';
import { sparkDomain } from '../series';
import { useNow } from '../hooks';
import type { Int64 } from '../types';

export function ErrorBox({ error, what }: { error?: Error; what?: string }) {
  if (!error) return null;
  const status = error instanceof ApiError && error.status ? ` (HTTP ${error.status})` : '';
  return (
    <div class="error" role="alert">
      {what ? <strong>{what}: </strong> : null}
      {error.message}
      {status}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function Badge({ tone, children, title }: { tone: 'ok' | 'warn' | 'bad' | 'info' | 'muted'; children: ComponentChildren; title?: string }) {
  return (
    <span class={`badge badge-${tone}`} title={title}>
      {children}
    </span>
  );
}

export function Severity({ value }: { value?: string }) {
  const name = enumName(value, 'SEVERITY_');
  const tone = name === 'CRITICAL' ? 'bad' : name === 'WARNING' ? 'warn' : 'info';
  return <Badge tone={tone}>{name}</Badge>;
}

export function Time({ ts }: { ts?: string }) {
  return <time dateTime={ts}>{time(ts)}</time>;
}

export function Countdown({ ts }: { ts?: string }) {
  const now = useNow(1000);
  return (
    <span class="countdown" title={time(ts)}>
      {countdown(ts, now)}
    </span>
  );
}

/** Column is a column heading: its label, or the label with details. */
export type Column = ComponentChildren | { label: ComponentChildren; num?: boolean; title?: string };

/** numCol is the column heading of figures, aligned right. */
export const numCol = (label: ComponentChildren): Column => ({ label, num: true });

/**
 * Head is a table's header row, a heading of scope col per column; a num
 * column is aligned right, as its figures are.
 */
export function Head({ columns }: { columns: Column[] }) {
  return (
    <thead>
      <tr>
        {columns.map((c, i) =>
          c !== null && typeof c === 'object' && 'label' in c ? (
            <th key={i} scope="col" class={c.num ? 'num' : undefined} title={c.title}>
              {c.label}
            </th>
          ) : (
            <th key={i} scope="col">
              {c}
            </th>
          ),
        )}
      </tr>
    </thead>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

/** AuditRecord is what every audit trail keeps of an action. */
interface AuditRecord {
  sequence: Int64;
  time?: string;
  principal?: string;
  detail?: string;
}

/**
 * AuditTable lists an audit trail newest first: each action's number,
 * time and who, then the columns of what it did, then its detail; empty
 * is what to say when there is none.
 */
export function AuditTable<T extends AuditRecord>({
  records,
  columns,
  empty,
  rowClass,
  testid,
}: {
  records: T[];
  columns: [label: string, cell: (r: T) => ComponentChildren][];
  empty: string;
  rowClass?: (r: T) => string;
  testid?: string;
}) {
  if (records.length === 0) return <Empty>{empty}</Empty>;
  return (
    <table class="table table-compact" data-testid={testid}>
      <Head columns={['#', 'When', 'Who', ...columns.map(([label]) => label), 'Detail']} />
      <tbody>
        {[...records].reverse().map((r) => (
          <tr key={String(r.sequence)} class={rowClass?.(r)}>
            <td>{r.sequence}</td>
            <td>
              <Time ts={r.time} />
            </td>
            <td>{r.principal}</td>
            {columns.map(([label, cell]) => (
              <td key={label}>{cell(r)}</td>
            ))}
            <td class="cell-wrap">{r.detail}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/**
 * Sparkline is a table's mini-chart of a share series (0..1): a line over
 * a shaded area, scaled to the values and the floor (not 0..100%, where a
 * series near 98% is a hairline), the floor dashed and labelled, a marker
 * per partition coloured by its verdict or by falling under the floor, and
 * the newest value written at the end. Each marker names its partition on
 * hover.
 */
export function Sparkline({ values, low, labels, verdicts }: { values: (number | null)[]; low?: number; labels?: string[]; verdicts?: string[] }) {
  const w = 150;
  const h = 40;
  const padL = 2;
  const padR = 40;
  const padY = 4;
  const [lo, hi] = sparkDomain(values, low);
  const x = (i: number) => (values.length === 1 ? (w - padR) / 2 : padL + (i * (w - padR - padL)) / (values.length - 1));
  const y = (v: number) => padY + (1 - (v - lo) / (hi - lo)) * (h - 2 * padY);
  const pts = values.map((v, i) => (v === null ? null : ([x(i), y(v)] as const)));
  const line = pts.map((p, i) => (p ? `${i === 0 || !pts[i - 1] ? 'M' : 'L'}${p[0].toFixed(1)},${p[1].toFixed(1)}` : '')).join('');
  const runs: string[] = [];
  let run: (readonly [number, number])[] = [];
  const flush = () => {
    if (run.length > 1) {
      runs.push(`M${run[0][0].toFixed(1)},${h - padY}${run.map((p) => `L${p[0].toFixed(1)},${p[1].toFixed(1)}`).join('')}L${run[run.length - 1][0].toFixed(1)},${h - padY}Z`);
    }
    run = [];
  };
  pts.forEach((p) => (p ? run.push(p) : flush()));
  flush();
  const lastIdx = values.map((v, i) => (v === null ? -1 : i)).reduce((a, b) => Math.max(a, b), -1);
  const shown = values.filter((v) => v !== null) as number[];
  const under = low === undefined ? 0 : shown.filter((v) => v < low).length;
  const summary =
    shown.length === 0
      ? 'no match rate yet'
      : `match rate of the last ${values.length} partitions, from ${pct(Math.min(...shown), 1, low)} to ${pct(Math.max(...shown), 1, low)}` +
        (low !== undefined ? `; minimum ${pct(low, 0)}, ${under} under it` : '');
  if (shown.length === 0) {
    return (
      <span class="muted" title="no partition has the identifier to match">
        –
      </span>
    );
  }
  return (
    <svg class="sparkline" width={w} height={h} viewBox={`0 0 ${w} ${h}`} role="img" aria-label={summary} data-testid="sparkline">
      <title>{summary}</title>
      {runs.map((d, i) => (
        <path key={i} d={d} class="spark-area" />
      ))}
      {low !== undefined ? (
        <>
          <line x1={padL} x2={w - padR} y1={y(low)} y2={y(low)} class="spark-floor" />
          <text x={padL + 1} y={y(low) > h / 2 ? y(low) - 2 : y(low) + 8} class="spark-floor-label">
            min {pct(low, 0)}
          </text>
        </>
      ) : null}
      <path d={line} class="spark-line" />
      {pts.map((p, i) => {
        if (!p) return null;
        const v = values[i] as number;
        const verdict = verdicts?.[i] ?? '';
        const cls = verdict === 'BLOCKED' || (low !== undefined && v < low) ? 'spark-low' : verdict.includes('ALERT') ? 'spark-warn' : 'spark-pt';
        return (
          <circle key={i} cx={p[0]} cy={p[1]} r={cls === 'spark-pt' ? 1.6 : 2.8} class={cls}>
            <title>{`${labels?.[i] ?? `partition ${i + 1}`}: ${pct(v, 1, low)}${verdict && verdict !== '–' ? ` ${verdict}` : ''}`}</title>
          </circle>
        );
      })}
      {lastIdx >= 0 ? (
        <text x={w - padR + 3} y={Math.max(9, Math.min(h - 10, y(values[lastIdx] as number) + 3))} class="spark-last">
          {pct(values[lastIdx] as number, 1, low)}
        </text>
      ) : null}
    </svg>
  );
}

export interface ConfirmProps {
  title: string;
  /** What will happen, in words and numbers. */
  children: ComponentChildren;
  confirmLabel: string;
  /** reason, when set, asks for a reason and passes it on. */
  reason?: { label: string; placeholder?: string };
  danger?: boolean;
  onConfirm: (reason: string) => Promise<void>;
  onClose: () => void;
}

/**
 * Confirm is a modal dialog (the native <dialog>: focus stays inside, Esc
 * closes) for an action that changes something. It shows what the action
 * will do and, where the API records one, asks for a reason.
 */
export function Confirm({ title, children, confirmLabel, reason, danger, onConfirm, onClose }: ConfirmProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error>();
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
  }, []);
  const submit = async (e: JSX.TargetedEvent<HTMLFormElement>) => {
    e.preventDefault();
    if (reason && !text.trim()) {
      setError(new Error(`${reason.label} is required: it is kept in the audit trail`));
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      await onConfirm(text.trim());
      ref.current?.close();
      onClose();
    } catch (err) {
      setError(err as Error);
    } finally {
      setBusy(false);
    }
  };
  return (
    <dialog ref={ref} class="dialog" aria-labelledby="dialog-title" onClose={onClose} onCancel={() => !busy && onClose()}>
      <form method="dialog" onSubmit={submit}>
        <h2 id="dialog-title">{title}</h2>
        <div class="dialog-body">{children}</div>
        {reason ? (
          <label class="field">
            <span>{reason.label}</span>
            <input
              type="text"
              name="reason"
              value={text}
              placeholder={reason.placeholder}
              aria-required="true"
              autoFocus
              onInput={(e) => setText((e.target as HTMLInputElement).value)}
            />
          </label>
        ) : null}
        <ErrorBox error={error} />
        <div class="dialog-actions">
          <button type="button" class="btn" onClick={() => onClose()} disabled={busy} autoFocus={!reason}>
            Cancel
          </button>
          <button type="submit" class={danger ? 'btn btn-danger' : 'btn btn-primary'} disabled={busy}>
            {busy ? 'Working…' : confirmLabel}
          </button>
        </div>
      </form>
    </dialog>
  );
}
