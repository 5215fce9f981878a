// A small router over the History API: every page has a real URL under
// /ui/, so links open in new tabs, reloads keep the page, and the Go
// handler answers any such URL with index.html.
import { useEffect, useState } from 'preact/hooks';

export const BASE = '/ui/';

export interface Location {
  /** path below BASE, without a leading slash ("", "sources/shop.orders") */
  path: string;
  params: URLSearchParams;
}

function current(): Location {
  const p = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : '';
  return { path: decodeURIComponent(p).replace(/\/+$/, ''), params: new URLSearchParams(location.search) };
}

const listeners = new Set<() => void>();

/** href builds a console URL from a path below BASE and query parameters. */
export function href(path: string, params?: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params ?? {})) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  return BASE + path.split('/').map(encodeURIComponent).join('/') + (s ? `?${s}` : '');
}

/** navigate moves to url without a reload; replace keeps history short for filter changes. */
export function navigate(url: string, replace = false): void {
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  listeners.forEach((fn) => fn());
  if (!replace) window.scrollTo(0, 0);
}

export function useLocation(): Location {
  const [loc, setLoc] = useState(current);
  useEffect(() => {
    const update = () => setLoc(current());
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return loc;
}

/**
 * onLinkClick lets the router handle a plain left click on an in-console
 * link; modified clicks (new tab, new window) stay the browser's.
 */
export function onLinkClick(e: MouseEvent): void {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = (e.target as Element | null)?.closest?.('a');
  if (!a || a.target || a.hasAttribute('download')) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith(BASE)) return;
  e.preventDefault();
  navigate(url.pathname + url.search + url.hash);
}
