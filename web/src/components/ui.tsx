// Small building blocks shared by the pages.
import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from '../api';
import { countdown, enumName, time } from '../format';
import { useNow } from '../hooks';

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

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

/**
 * Sparkline draws a share series (0..1) as a small SVG line, for tables; the
 * numbers themselves are in the cell beside it.
 */
export function Sparkline({ values, low }: { values: (number | null)[]; low?: number }) {
  const w = 96;
  const h = 22;
  const pts = values.map((v, i) => (v === null ? null : [values.length === 1 ? w / 2 : (i * (w - 4)) / (values.length - 1) + 2, h - 2 - v * (h - 4)]));
  const d = pts
    .map((p, i) => (p ? `${i === 0 || !pts[i - 1] ? 'M' : 'L'}${p[0].toFixed(1)},${p[1].toFixed(1)}` : ''))
    .join('');
  return (
    <svg class="sparkline" width={w} height={h} viewBox={`0 0 ${w} ${h}`} aria-hidden="true">
      {low !== undefined ? <line x1="0" x2={w} y1={h - 2 - low * (h - 4)} y2={h - 2 - low * (h - 4)} class="spark-floor" /> : null}
      <path d={d} class="spark-line" />
      {pts.map((p, i) =>
        p && values[i] !== null && low !== undefined && (values[i] as number) < low ? <circle cx={p[0]} cy={p[1]} r="2.5" class="spark-low" /> : null,
      )}
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
