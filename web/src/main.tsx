// The Seam console's shell: sign-in, navigation and the pages.
import { render } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import './styles.css';
import { api, clearToken, getToken, onUnauthorized, SERVICES } from './api';
import { href, onLinkClick, useLocation } from './router';
import { newSession, SessionContext, type Session } from './session';
import type { WhoAmI } from './types';
import { ErrorBox, Loading } from './components/ui';
import { LiveIndicator } from './components/Live';
import { startLive } from './live';
import { SourcesPage } from './pages/Sources';
import { SourcePage } from './pages/Source';
import { QuarantinePage, RecordPage } from './pages/Quarantine';
import { AlertsPage } from './pages/Alerts';
import { IdentifiersPage } from './pages/Identifiers';
import { IncidentPage } from './pages/Incident';
import { PartitionPage } from './pages/Partition';
import { SignInPage } from './pages/SignIn';

const NAV = [
  { path: '', label: 'Sources', needs: [SERVICES.registry, SERVICES.gate] },
  { path: 'quarantine', label: 'Quarantine', needs: [SERVICES.gate] },
  { path: 'alerts', label: 'Alerts and events', needs: [SERVICES.gate, SERVICES.registry] },
  { path: 'identifiers', label: 'Identifiers', needs: [SERVICES.idmap] },
];

function App() {
  const [who, setWho] = useState<WhoAmI | null>(null);
  const [checking, setChecking] = useState(() => getToken() !== null);
  const [error, setError] = useState<Error>();
  const [notice, setNotice] = useState<string>();
  const loc = useLocation();

  useEffect(() => {
    // For the end-to-end tests' first-load measurement.
    performance.mark('seam-console-first-render');
  }, []);
  useEffect(() => {
    if (!getToken()) return;
    api.get<WhoAmI>('/v1/whoami').then(
      (w) => {
        setWho(w);
        setChecking(false);
      },
      (e: Error) => {
        setError(e);
        setChecking(false);
      },
    );
  }, []);
  useEffect(
    () =>
      onUnauthorized((e) => {
        clearToken();
        setWho(null);
        setNotice(`Signed out: ${e.message}`);
      }),
    [],
  );

  const session = useMemo<Session | null>(
    () =>
      who
        ? newSession(who, () => {
            clearToken();
            setWho(null);
            setNotice('Signed out. The token is forgotten in this tab.');
          })
        : null,
    [who],
  );

  useEffect(() => (session ? startLive({ registry: session.serves(SERVICES.registry) }) : undefined), [session]);

  if (checking) return <Loading what="your session" />;
  if (!session) {
    return (
      <>
        {error && !notice ? <ErrorBox error={error} what="Could not check the token" /> : null}
        <SignInPage
          notice={notice}
          onSignedIn={(w) => {
            setNotice(undefined);
            setError(undefined);
            setWho(w);
          }}
        />
      </>
    );
  }
  const nav = NAV.filter((n) => n.needs.some((svc) => session.serves(svc)));
  const section = loc.path.split('/')[0];
  return (
    <SessionContext.Provider value={session}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top" onClick={(e) => onLinkClick(e as unknown as MouseEvent)}>
        <a class="brand" href={href('')}>
          Seam
        </a>
        <nav aria-label="Console">
          <ul>
            {nav.map((n) => {
              const current = n.path === '' ? section === '' || section === 'sources' : section === n.path;
              return (
                <li key={n.path}>
                  <a href={href(n.path)} aria-current={current ? 'page' : undefined}>
                    {n.label}
                  </a>
                </li>
              );
            })}
          </ul>
        </nav>
        <LiveIndicator />
        <div class="who" data-testid="who">
          <span>
            Signed in as <strong>{session.who.name}</strong>
          </span>{' '}
          {session.who.roles.map((r) => (
            <span key={r} class="role" data-testid="role">
              {r}
            </span>
          ))}
          <button type="button" class="btn btn-small" onClick={session.signOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1} onClick={(e) => onLinkClick(e as unknown as MouseEvent)}>
        <Page path={loc.path} params={loc.params} />
      </main>
    </SessionContext.Provider>
  );
}

function Page({ path, params }: { path: string; params: URLSearchParams }) {
  const [head, ...rest] = path.split('/');
  switch (head) {
    case '':
      return <SourcesPage />;
    case 'sources':
      return rest.length ? <SourcePage key={rest.join('/')} subject={rest.join('/')} params={params} /> : <SourcesPage />;
    case 'quarantine':
      return rest.length ? <RecordPage id={rest.join('/')} /> : <QuarantinePage params={params} />;
    case 'alerts':
      return <AlertsPage params={params} />;
    case 'identifiers':
      return <IdentifiersPage />;
    case 'incident':
      return rest.length ? <IncidentPage key={rest.join('/')} subject={rest.join('/')} /> : <SourcesPage />;
    case 'partition':
      // partition/{subject}/{partition}: the partition is the last segment.
      return rest.length > 1 ? (
        <PartitionPage key={rest.join('/')} subject={rest.slice(0, -1).join('/')} partition={rest[rest.length - 1]} />
      ) : (
        <SourcesPage />
      );
    case 'signin':
      return <SourcesPage />;
    default:
      return (
        <section>
          <h1>Not found</h1>
          <p>
            The console has no page at /ui/{path}. <a href={href('')}>Go to the sources.</a>
          </p>
        </section>
      );
  }
}

render(<App />, document.getElementById('app')!);
