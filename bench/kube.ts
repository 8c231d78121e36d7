/**
 * The bench's own API client: plain node:https with the admin kubeconfig's client certificate.
 * Not src/kube/rest.ts, because the bench must (1) read the API server's text /metrics and (2)
 * count every request it makes itself, so that its own polling can be subtracted from the API
 * server's request counters and only the contender's traffic (plus the control plane reacting to
 * it) is reported.
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { parse as parseYaml } from 'yaml';

export type Verb = 'GET' | 'POST' | 'PATCH' | 'DELETE';

export interface ApiResponse {
  status: number;
  body: string;
}

/** Requests the bench itself sent: reads (GET, including LIST and /metrics) and writes. */
export interface OwnRequests {
  reads: number;
  writes: number;
}

export interface BenchKube {
  readonly server: string;
  /** One request; resolves with any status, rejects on connection errors and timeouts. */
  call(verb: Verb, path: string, opts?: { body?: unknown; contentType?: string; accept?: string; timeoutMs?: number }): Promise<ApiResponse>;
  /** Like call, but a status outside 2xx (and outside `allow`) is an error naming the request. */
  json<T>(verb: Verb, path: string, opts?: { body?: unknown; contentType?: string; accept?: string; allow?: number[] }): Promise<T | undefined>;
  /**
   * A long-running GET (a watch): onLine gets every complete line of the body as it arrives.
   * Resolves once the response has begun, with its status and a promise that settles when the
   * server closes the stream or signal aborts it. Counted as one read when it ends, which is also
   * when the API server counts it.
   */
  stream(path: string, onLine: (line: string) => void, signal: AbortSignal): Promise<{ status: number; ended: Promise<void> }>;
  own(): OwnRequests;
  close(): void;
}

interface KubeconfigFile {
  'current-context'?: string;
  contexts?: { name: string; context: { cluster: string; user: string } }[];
  clusters?: { name: string; cluster: { server: string; 'certificate-authority-data'?: string } }[];
  users?: { name: string; user: { 'client-certificate-data'?: string; 'client-key-data'?: string } }[];
}

const b64 = (s: string | undefined, what: string): string => {
  if (s === undefined) throw new Error(`kubeconfig has no ${what} (the bench needs an admin kubeconfig with embedded client certificate data)`);
  return Buffer.from(s, 'base64').toString('utf8');
};

export function createBenchKube(kubeconfigPath: string): BenchKube {
  const kc = parseYaml(readFileSync(kubeconfigPath, 'utf8')) as KubeconfigFile;
  const ctx = kc.contexts?.find((c) => c.name === kc['current-context'])?.context;
  const cluster = kc.clusters?.find((c) => c.name === ctx?.cluster)?.cluster;
  const user = kc.users?.find((u) => u.name === ctx?.user)?.user;
  if (ctx === undefined || cluster === undefined || user === undefined) throw new Error(`${kubeconfigPath}: no usable current context`);
  const server = cluster.server.replace(/\/+$/, '');
  // Keep-alive: the bench polls once a second; a TLS handshake per poll would load the API server
  // (and our own CPU) for nothing.
  const agent = new Agent({
    keepAlive: true,
    maxSockets: 32,
    ca: b64(cluster['certificate-authority-data'], 'certificate-authority-data'),
    cert: b64(user['client-certificate-data'], 'client-certificate-data'),
    key: b64(user['client-key-data'], 'client-key-data'),
  });
  const own: OwnRequests = { reads: 0, writes: 0 };

  const call: BenchKube['call'] = (verb, path, opts = {}) => {
    // The API server does not count /metrics in apiserver_request_total (checked on v1.33).
    if (path === '/metrics') { /* not counted */ } else if (verb === 'GET') own.reads++;
    else own.writes++;
    const url = new URL(server + path);
    const payload = opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    const headers: Record<string, string | number> = { accept: opts.accept ?? 'application/json', 'user-agent': 'chartpilot-bench' };
    if (payload !== undefined) {
      headers['content-type'] = opts.contentType ?? 'application/json';
      headers['content-length'] = Buffer.byteLength(payload);
    }
    const timeoutMs = opts.timeoutMs ?? 60_000;
    return new Promise<ApiResponse>((resolve, reject) => {
      const req = request({ method: verb, hostname: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, agent, headers, timeout: timeoutMs }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => { body += chunk; });
        res.on('end', () => { resolve({ status: res.statusCode ?? 0, body }); });
        res.on('error', reject);
      });
      req.on('timeout', () => { req.destroy(new Error(`${verb} ${path}: no answer within ${timeoutMs} ms`)); });
      req.on('error', reject);
      req.end(payload);
    });
  };

  const stream: BenchKube['stream'] = (path, onLine, signal) => new Promise((resolve, reject) => {
    const url = new URL(server + path);
    let counted = false;
    const count = (): void => { if (!counted) { counted = true; own.reads++; } };
    const req = request({ method: 'GET', hostname: url.hostname, port: url.port, path: `${url.pathname}${url.search}`, agent, headers: { accept: 'application/json', 'user-agent': 'chartpilot-bench' } }, (res) => {
      let rest = '';
      res.setEncoding('utf8');
      const ended = new Promise<void>((done) => {
        const finish = (): void => { count(); done(); };
        res.on('data', (chunk: string) => {
          const lines = (rest + chunk).split('\n');
          rest = lines.pop() ?? '';
          for (const l of lines) if (l.trim() !== '') onLine(l);
        });
        res.on('end', finish);
        res.on('close', finish);
        res.on('error', finish);
      });
      resolve({ status: res.statusCode ?? 0, ended });
    });
    const abort = (): void => { req.destroy(); };
    signal.addEventListener('abort', abort, { once: true });
    req.on('close', () => { signal.removeEventListener('abort', abort); count(); });
    req.on('error', (err) => { count(); reject(err); });
    if (signal.aborted) abort();
    req.end();
  });

  return {
    server,
    call,
    stream,
    async json<T>(verb: Verb, path: string, opts: { body?: unknown; contentType?: string; accept?: string; allow?: number[] } = {}): Promise<T | undefined> {
      const r = await call(verb, path, opts);
      if (r.status >= 200 && r.status < 300) return r.body === '' ? undefined : (JSON.parse(r.body) as T);
      if (opts.allow?.includes(r.status) === true) return undefined;
      throw new Error(`${verb} ${path} answered ${r.status}: ${r.body.slice(0, 500)}`);
    },
    own: () => ({ ...own }),
    close: () => { agent.destroy(); },
  };
}

/** Verbs of apiserver_request_total that change state (APPLY is server-side apply, which Helm 4 uses). */
const WRITE_VERBS = new Set(['POST', 'PUT', 'PATCH', 'APPLY', 'DELETE', 'DELETECOLLECTION']);

/** A snapshot of the API server's apiserver_request_total counters. */
export interface RequestCounters {
  total: number;
  writes: number;
  /** `VERB group/resource` → count, writes only: shows where idle writes come from. */
  writesByResource: Record<string, number>;
  /** The same for every verb (LIST, GET, WATCH too): shows whether a restart reads per CR or lists once. */
  requestsByResource: Record<string, number>;
}

/** Parses Prometheus text; sums apiserver_request_total over all label sets. */
export function parseRequestCounters(text: string): RequestCounters {
  const out: RequestCounters = { total: 0, writes: 0, writesByResource: {}, requestsByResource: {} };
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const close = line.lastIndexOf('}');
    const value = Number(line.slice(close + 1).trim());
    if (!Number.isFinite(value)) continue;
    const labels = new Map<string, string>();
    for (const m of line.slice(line.indexOf('{') + 1, close).matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels.set(m[1] ?? '', m[2] ?? '');
    out.total += value;
    const verb = labels.get('verb') ?? '';
    const group = labels.get('group') ?? '';
    const sub = labels.get('subresource') ?? '';
    const key = `${verb} ${group === '' ? 'core' : group}/${labels.get('resource') ?? ''}${sub === '' ? '' : `/${sub}`}`;
    out.requestsByResource[key] = (out.requestsByResource[key] ?? 0) + value;
    if (WRITE_VERBS.has(verb)) {
      out.writes += value;
      out.writesByResource[key] = (out.writesByResource[key] ?? 0) + value;
    }
  }
  return out;
}

export async function scrapeRequestCounters(kube: BenchKube): Promise<RequestCounters> {
  const r = await kube.call('GET', '/metrics', { accept: 'text/plain' });
  if (r.status !== 200) throw new Error(`GET /metrics answered ${r.status}: ${r.body.slice(0, 300)}`);
  return parseRequestCounters(r.body);
}

export function diffCounters(after: RequestCounters, before: RequestCounters): RequestCounters {
  const delta = (a: Record<string, number>, b: Record<string, number>): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const [k, v] of Object.entries(a)) {
      const d = v - (b[k] ?? 0);
      if (d > 0) out[k] = d;
    }
    return out;
  };
  return {
    total: after.total - before.total,
    writes: after.writes - before.writes,
    writesByResource: delta(after.writesByResource, before.writesByResource),
    requestsByResource: delta(after.requestsByResource, before.requestsByResource),
  };
}
