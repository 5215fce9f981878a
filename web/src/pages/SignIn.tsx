// Sign-in: paste a token. It is kept in this tab's sessionStorage only and
// sent as a bearer header on every call; closing the tab forgets it.
import { useState } from 'preact/hooks';
import { api, ApiError, clearToken, setToken } from '../api';
import type { WhoAmI } from '../types';
import { ErrorBox } from '../components/ui';

export function SignInPage({ onSignedIn, notice }: { onSignedIn: (who: WhoAmI) => void; notice?: string }) {
  const [token, setValue] = useState('');
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const t = token.trim();
    if (!t) {
      setError(new Error('Paste a token first.'));
      return;
    }
    setBusy(true);
    setError(undefined);
    setToken(t);
    try {
      const who = await api.get<WhoAmI>('/v1/whoami');
      onSignedIn(who);
    } catch (err) {
      clearToken();
      setError(err instanceof ApiError && err.status === 401 ? new Error('This server does not know that token.') : (err as Error));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="signin">
      <form class="panel signin-panel" onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">Sign in to the Seam console</h1>
        {notice ? (
          <p class="note" role="status">
            {notice}
          </p>
        ) : null}
        <label class="field">
          <span>Token</span>
          <input
            type="password"
            name="token"
            autoComplete="off"
            spellcheck={false}
            autoFocus
            value={token}
            placeholder="seam_…"
            onInput={(e) => setValue((e.target as HTMLInputElement).value)}
          />
        </label>
        <p class="muted">
          The token stays in this browser tab only (session storage) and goes with every call as <code>Authorization: Bearer</code>; closing the tab forgets it. On
          the machine that runs <code>seam up</code>, the admin token is in <code>seam-data/admin.token</code>.
        </p>
        <ErrorBox error={error} />
        <button class="btn btn-primary" type="submit" disabled={busy}>
          {busy ? 'Checking…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
