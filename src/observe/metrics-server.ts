/**
 * `GET /metrics`: the Prometheus text exposition of the operator's private registry, over HTTP or
 * (`--metrics-secure`) HTTPS, optionally only for callers the API server authorizes
 * (`--metrics-require-rbac`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  notFound,
  pathOf,
  refuseNonGet,
  startHttpServer,
  startHttpsServer,
  type ConnectionLimits,
  type Handler,
  type ListenAddress,
  type RunningServer,
  type RunningTlsServer,
  type TlsSettings,
} from './http-server.js';
import type { OperatorMetrics } from './metrics.js';
import type { ScrapeAuthorizer } from './scrape-auth.js';

/** Plain HTTP, anyone who reaches the port may scrape. */
export function startMetricsServer(address: ListenAddress, metrics: OperatorMetrics, limits: ConnectionLimits): Promise<RunningServer> {
  return startHttpServer('metrics server', address, metricsHandler(metrics, undefined), limits);
}

/** HTTPS (`--metrics-secure`), and with `auth` only for callers the API server authorizes (`--metrics-require-rbac`). */
export function startSecureMetricsServer(
  address: ListenAddress,
  metrics: OperatorMetrics,
  tls: TlsSettings,
  auth: ScrapeAuthorizer | undefined,
  limits: ConnectionLimits,
): Promise<RunningTlsServer> {
  return startHttpsServer('metrics server', address, metricsHandler(metrics, auth), tls, limits);
}

function metricsHandler(metrics: OperatorMetrics, auth: ScrapeAuthorizer | undefined): Handler {
  return async (req, res) => {
    if (refuseNonGet(req, res)) return;
    const { path } = pathOf(req);
    if (auth !== undefined && !(await authorized(auth, path, req, res))) return;
    if (path !== '/metrics') {
      notFound(res);
      return;
    }
    const { contentType, body } = await metrics.render();
    res.writeHead(200, { 'Content-Type': contentType, 'Cache-Control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : body);
  };
}

/** Answers 401/403/503 itself and returns false unless the caller may `get` this path. */
async function authorized(auth: ScrapeAuthorizer, path: string, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
  // Every path is authorized, not only /metrics, as controller-runtime's filter does: whether
  // a path exists is not told to strangers.
  const decision = await auth.check(req.headers.authorization, { path, verb: 'get' });
  if (decision.status === 200) return true;
  res.writeHead(decision.status, {
    'Content-Type': 'text/plain; charset=utf-8',
    ...(decision.status === 401 ? { 'WWW-Authenticate': 'Bearer' } : {}),
    ...(decision.status === 429 ? { 'Retry-After': '1' } : {}),
  });
  res.end(`${decision.message}\n`);
  return false;
}
