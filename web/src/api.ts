// The console's only way to Seam: the REST API of the process that served
// it, with the pasted token as a bearer header. No cookies: the token lives
// in this tab's sessionStorage and goes away with the tab.

const TOKEN_KEY = 'seam.console.token';

export function getToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

export function setToken(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function clearToken(): void {
  sessionStorage.removeItem(TOKEN_KEY);
}

/** ApiError is a failed call: the HTTP status and the gRPC status message. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code?: number,
    readonly details?: unknown[],
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

type Listener = (err: ApiError) => void;
const unauthorizedListeners = new Set<Listener>();

/** onUnauthorized calls fn whenever the server refuses the token (HTTP 401). */
export function onUnauthorized(fn: Listener): () => void {
  unauthorizedListeners.add(fn);
  return () => unauthorizedListeners.delete(fn);
}

export type Query = Record<string, string | number | boolean | undefined | null | (string | number)[]>;

/** query renders params the way grpc-gateway reads them: repeated fields repeat the key. */
export function query(params?: Query): string {
  if (!params) return '';
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '') continue;
    if (Array.isArray(v)) {
      for (const item of v) q.append(k, String(item));
    } else {
      q.append(k, String(v));
    }
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

function headers(body: boolean): HeadersInit {
  const h: Record<string, string> = { Accept: 'application/json' };
  const token = getToken();
  if (token) h.Authorization = `Bearer ${token}`;
  if (body) h['Content-Type'] = 'application/json';
  return h;
}

async function failure(res: Response): Promise<ApiError> {
  let message = `${res.status} ${res.statusText}`;
  let code: number | undefined;
  let details: unknown[] | undefined;
  try {
    const text = await res.text();
    try {
      const body = JSON.parse(text) as { message?: string; code?: number; details?: unknown[] };
      if (body.message) message = body.message;
      code = body.code;
      details = body.details;
    } catch {
      if (text.trim()) message = text.trim();
    }
  } catch {
    // The body could not be read; the status line says enough.
  }
  const err = new ApiError(message, res.status, code, details);
  if (res.status === 401) unauthorizedListeners.forEach((fn) => fn(err));
  return err;
}

/**
 * send makes a request of the REST API with the session's token and
 * returns its answer, or throws an ApiError when Seam cannot be reached or
 * answers with an error.
 */
async function send(method: string, path: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers: headers(body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'omit',
      cache: 'no-store',
      signal,
    });
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e;
    throw new ApiError(`could not reach Seam at ${location.host}: ${(e as Error).message}`, 0);
  }
  if (!res.ok) throw await failure(res);
  return res;
}

async function call<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const res = await send(method, path, body, signal);
  return (await res.json()) as T;
}

export const api = {
  get: <T>(path: string, params?: Query, signal?: AbortSignal) => call<T>('GET', path + query(params), undefined, signal),
  post: <T>(path: string, body: unknown, signal?: AbortSignal) => call<T>('POST', path, body, signal),
  put: <T>(path: string, body: unknown, signal?: AbortSignal) => call<T>('PUT', path, body, signal),
};

/**
 * ndjson splits a server-streaming answer of the gateway into its
 * messages: one JSON object per line, {"result": …} or {"error": …}.
 * It yields each result and throws the first error.
 */
export async function* ndjson<T>(body: ReadableStream<Uint8Array>): AsyncGenerator<T> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (value) buf += decoder.decode(value, { stream: true });
      if (done) buf += decoder.decode();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (line) yield parseLine<T>(line);
      }
      if (done) {
        if (buf.trim()) yield parseLine<T>(buf.trim());
        return;
      }
    }
  } finally {
    reader.releaseLock();
  }
}

function parseLine<T>(line: string): T {
  let msg: { result?: T; error?: { message?: string; code?: number; http_code?: number } };
  try {
    msg = JSON.parse(line);
  } catch {
    throw new ApiError(`the stream sent a line that is not JSON: ${line.slice(0, 80)}`, 0);
  }
  if (msg.error) throw new ApiError(msg.error.message ?? 'the stream failed', msg.error.http_code ?? 0, msg.error.code);
  if (msg.result === undefined) throw new ApiError(`the stream sent a line without result: ${line.slice(0, 80)}`, 0);
  return msg.result;
}

/**
 * stream calls a server-streaming route and yields its messages; onOpen is
 * called once the server has answered, before any message.
 */
export async function* stream<T>(method: 'GET' | 'POST', path: string, body: unknown, signal?: AbortSignal, onOpen?: () => void): AsyncGenerator<T> {
  const res = await send(method, path, body, signal);
  if (!res.body) throw new ApiError('the stream has no body', res.status);
  onOpen?.();
  yield* ndjson<T>(res.body);
}

/** Full gRPC method names, as /v1/whoami lists what the caller may call. */
export const M = {
  contain: 'seam.gate.v1.GateService/Contain',
  release: 'seam.gate.v1.GateService/Release',
  replay: 'seam.gate.v1.GateService/Replay',
  planReplay: 'seam.gate.v1.GateService/PlanReplay',
  discard: 'seam.gate.v1.GateService/DiscardQuarantined',
  listQuarantine: 'seam.gate.v1.GateService/ListQuarantine',
  getMonitor: 'seam.gate.v1.GateService/GetMonitor',
  acknowledgeAlert: 'seam.gate.v1.GateService/AcknowledgeAlert',
  resolveAlert: 'seam.gate.v1.GateService/ResolveAlert',
  translate: 'seam.idmap.v1.IdMapService/Translate',
} as const;

export const SERVICES = {
  registry: 'seam.registry.v1.RegistryService',
  gate: 'seam.gate.v1.GateService',
  idmap: 'seam.idmap.v1.IdMapService',
  adapter: 'seam.adapter.v1.AdapterService',
} as const;
