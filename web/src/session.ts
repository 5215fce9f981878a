import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { WhoAmI } from './types';

/** Session is who signed in, as /v1/whoami answered. */
export interface Session {
  who: WhoAmI;
  /** can reports whether the caller may call a full gRPC method here. */
  can: (method: string) => boolean;
  /** serves reports whether this process serves a gRPC service. */
  serves: (service: string) => boolean;
  signOut: () => void;
}

export function newSession(who: WhoAmI, signOut: () => void): Session {
  const methods = new Set(who.methods);
  const services = new Set(who.services);
  return { who, can: (m) => methods.has(m), serves: (s) => services.has(s), signOut };
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside a signed-in console');
  return s;
}
