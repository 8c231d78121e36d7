/**
 * Starts the metrics and health probe servers of `chartpilot run` (either may be disabled with
 * bind address `0`) and logs where each really listens, so port 0 is usable by tests and tools.
 */
import type { Logger } from 'pino';
import { loadCertificateFiles, selfSignedCertificate, watchCertificateFiles, type CertificateFiles, type CertificateWatch } from './certificates.js';
import { EventLoopWatchdog, PROBE_LIMITS, startHealthServer, type HealthCheck } from './health-server.js';
import { DEFAULT_TIMEOUTS, type ConnectionLimits, type ListenAddress, type RunningServer } from './http-server.js';
import { startMetricsServer, startSecureMetricsServer } from './metrics-server.js';
import type { OperatorMetrics } from './metrics.js';
import type { ScrapeAuthorizer } from './scrape-auth.js';

/** `--metrics-secure` and what goes with it. */
export interface MetricsSecurity {
  /** A mounted certificate (re-read when it changes); undefined = a self-signed one made at start. */
  readonly certificateFiles: CertificateFiles | undefined;
  /** `--enable-http2`. */
  readonly http2: boolean;
  /** `--metrics-require-rbac`; undefined = anyone who reaches the port may scrape. */
  readonly auth: ScrapeAuthorizer | undefined;
}

export interface ServersOptions {
  readonly metrics: OperatorMetrics;
  readonly metricsAddress: ListenAddress | undefined;
  /** HTTPS for the metrics server; undefined = plain HTTP. */
  readonly metricsSecurity?: MetricsSecurity | undefined;
  /** `--metrics-max-connections`; default METRICS_MAX_CONNECTIONS. */
  readonly metricsMaxConnections?: number | undefined;
  readonly healthAddress: ListenAddress | undefined;
  /** The `/readyz` check. */
  readonly ready: HealthCheck;
  readonly log: Logger;
}

/** Scrapers keep one connection each; a cluster has a few. */
export const METRICS_MAX_CONNECTIONS = 64;

/**
 * One scraper address's share of the metrics server: a Prometheus keeps one connection per
 * target, and `kubectl port-forward` sessions all arrive from the pod's loopback, so a few.
 * Scrapes keep the default timeouts: rendering, a token review and a large body take time.
 */
export const METRICS_MAX_PER_PEER = 8;

export interface Servers {
  close(): Promise<void>;
}

/**
 * Throws ListenError (after closing whatever did start) when an address cannot be bound, and
 * CertificateError when a mounted certificate cannot be used.
 */
export async function startServers(opts: ServersOptions): Promise<Servers> {
  const running: (RunningServer | CertificateWatch)[] = [];
  const watchdog = new EventLoopWatchdog();
  const close = async (): Promise<void> => {
    watchdog.stop();
    await Promise.all(running.map((s) => s.close()));
  };
  const maxConnections = opts.metricsMaxConnections ?? METRICS_MAX_CONNECTIONS;
  // A cap below the per-peer share (--metrics-max-connections 4) is the share too.
  const metricsLimit: ConnectionLimits = { maxConnections, maxPerPeer: Math.min(METRICS_MAX_PER_PEER, maxConnections), timeouts: DEFAULT_TIMEOUTS };
  try {
    if (opts.metricsAddress !== undefined) {
      const security = opts.metricsSecurity;
      if (security === undefined) {
        const s = await startMetricsServer(opts.metricsAddress, opts.metrics, metricsLimit);
        running.push(s);
        opts.log.info({ address: s.address, maxConnections: metricsLimit.maxConnections, maxPerPeer: metricsLimit.maxPerPeer }, 'metrics server listening');
      } else {
        const files = security.certificateFiles;
        const credentials = files === undefined ? await selfSignedCertificate() : await loadCertificateFiles(files);
        const s = await startSecureMetricsServer(opts.metricsAddress, opts.metrics, { credentials, http2: security.http2 }, security.auth, metricsLimit);
        running.push(s);
        if (files !== undefined) running.push(watchCertificateFiles(files, credentials, (c) => { s.setCredentials(c); }, opts.log));
        opts.log.info(
          {
            address: s.address,
            scheme: 'https',
            certificate: files === undefined ? 'self-signed' : files.dir,
            http2: security.http2,
            authorization: security.auth === undefined ? 'none' : 'TokenReview and SubjectAccessReview',
            maxConnections: metricsLimit.maxConnections,
            maxPerPeer: metricsLimit.maxPerPeer,
          },
          'metrics server listening',
        );
      }
    }
    if (opts.healthAddress !== undefined) {
      watchdog.start();
      const s = await startHealthServer(opts.healthAddress, {
        healthz: { 'event-loop': watchdog.check },
        readyz: { informers: opts.ready },
      });
      running.push(s);
      opts.log.info({ address: s.address, maxConnections: PROBE_LIMITS.maxConnections, maxPerPeer: PROBE_LIMITS.maxPerPeer }, 'health probe server listening');
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { close };
}
