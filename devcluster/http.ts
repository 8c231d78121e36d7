// A minimal HTTP(S) client for health probes and the few API calls startup needs. Plain
// node:https keeps control-plane startup free of kubectl process spawns (each costs ~100 ms).
import { request as httpRequest } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';

export interface HttpResponse {
  status: number;
  body: string;
}

export interface TlsIdentity {
  ca: string;
  cert: string;
  key: string;
}

export interface RequestSpec {
  method?: 'GET' | 'POST';
  body?: unknown;
  /** Client identity; without it the server cert is not verified (kcm/scheduler self-sign theirs). */
  tls?: TlsIdentity;
  timeoutMs?: number;
}

/** One request; rejects on connection errors and timeouts, resolves with any HTTP status. */
export function fetchText(url: string, spec: RequestSpec = {}): Promise<HttpResponse> {
  const u = new URL(url);
  const payload = spec.body === undefined ? undefined : JSON.stringify(spec.body);
  const options: RequestOptions = {
    method: spec.method ?? 'GET',
    hostname: u.hostname,
    port: u.port,
    path: `${u.pathname}${u.search}`,
    // No pooling: idle keep-alive sockets would outlive the probe and each probe is cheap on loopback.
    agent: false,
    timeout: spec.timeoutMs ?? 5000,
    headers: payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
    ...(spec.tls ? { ca: spec.tls.ca, cert: spec.tls.cert, key: spec.tls.key } : { rejectUnauthorized: false }),
  };
  const request = u.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(options, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => { body += chunk; });
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, body }); });
      res.on('error', reject);
    });
    req.on('timeout', () => { req.destroy(new Error(`${url}: no answer within ${String(spec.timeoutMs ?? 5000)} ms`)); });
    req.on('error', reject);
    req.end(payload);
  });
}
