/**
 * The operator's `/metrics` at N CRs (issue #29: "the metrics endpoint at 1000 CRs answers in
 * well under a second"). After a wave has converged the bench scrapes chartpilot as
 * docs/operations/monitoring.md tells users to — HTTPS (self-signed, not verified) with the token of a ServiceAccount allowed
 * `get` on `/metrics` — a few times in a row, and reports the wall time, the response's size, its
 * series and the operator's CPU per scrape. Counting and summing are pure; the I/O is at the end.
 */
import { request } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BenchKube } from './kube.js';
import { readStat } from './proc.js';
import { percentile } from './stats.js';

/** Where the operator serves /metrics and who may read it. */
export interface MetricsTarget {
  readonly port: number;
  /** A bearer token allowed `get` on the non-resource URL /metrics. */
  readonly token: string;
  /** The operator process, whose CPU the scrapes cost. */
  readonly pid: number;
}

/** Series in one exposition: every sample line is one series. */
export interface SeriesCounts {
  /** Every sample line (histogram buckets, process metrics, all of it). */
  series: number;
  /** Lines of `chartpilot_*` families. */
  chartpilotSeries: number;
  /** `chartpilot_*` lines labelled with one CR (kind, namespace and name). */
  chartpilotCrSeries: number;
  /** Any line labelled with one CR: the above plus operator-sdk's `resource_created_at_seconds`. */
  crSeries: number;
  /** Distinct CRs (kind/namespace/name) seen in those lines. */
  crs: number;
}

/** One GET /metrics as the bench saw it. */
export interface Scrape {
  readonly status: number;
  /** From sending the request to the last byte of the body (a fresh TLS connection each time). */
  readonly ms: number;
  readonly bytes: number;
}

/** What the report shows per converged wave; null where nothing was measured (no NaN in the results file). */
export interface MetricsProbe {
  scrapes: number;
  /** Scrapes answered 200. */
  ok: number;
  /** Of the answered ones; the first also pays the token's review (then cached by the operator). */
  medianMs: number | null;
  maxMs: number | null;
  firstMs: number | null;
  /** Size of the (uncompressed) exposition, the last answered scrape. */
  bytes: number;
  series: number;
  chartpilotSeries: number;
  /** chartpilot_* series labelled with a CR, divided by the bench's N. */
  chartpilotSeriesPerCr: number | null;
  /** Every series labelled with a CR (resource_created_at_seconds too), divided by N. */
  seriesPerCr: number | null;
  /** CRs the exposition names; N when every CR has its series. */
  crsSeen: number;
  /** The operator process's CPU (utime+stime) over all the scrapes, divided by their number. */
  operatorCpuMsPerScrape: number | null;
  /**
   * The same less the operator's CPU over an equally long window right after, without scrapes:
   * what is left of its other work (status writes, watches, timers) after a wave. Not below 0.
   */
  operatorCpuMsPerScrapeNet: number | null;
  /** Why a scrape or the whole probe failed (the first reason), absent when all answered 200. */
  error?: string;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+\S+(?:\s+\S+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Labels of one sample line's `{…}` part (values unescaped only as far as identity needs). */
function labelsOf(text: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (text === undefined) return out;
  for (const m of text.matchAll(LABEL)) out.set(m[1] ?? '', m[2] ?? '');
  return out;
}

/** Counts the series of a Prometheus text exposition, and those that belong to one CR. */
export function countSeries(text: string): SeriesCounts {
  const counts: SeriesCounts = { series: 0, chartpilotSeries: 0, chartpilotCrSeries: 0, crSeries: 0, crs: 0 };
  const crs = new Set<string>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (m === null) continue;
    counts.series++;
    const family = m[1] ?? '';
    const ours = family.startsWith('chartpilot_');
    if (ours) counts.chartpilotSeries++;
    const labels = labelsOf(m[2]);
    const kind = labels.get('kind');
    const namespace = labels.get('namespace');
    const name = labels.get('name');
    // A CR's series carry all three; the queue's `name` (a controller) comes without kind.
    if (kind === undefined || namespace === undefined || name === undefined) continue;
    counts.crSeries++;
    if (ours) counts.chartpilotCrSeries++;
    crs.add(`${kind}/${namespace}/${name}`);
  }
  counts.crs = crs.size;
  return counts;
}

/** The report's figures from the scrapes, the last answered body's counts, N and the operator's CPU. */
export function summarizeProbe(
  scrapes: readonly Scrape[],
  counts: SeriesCounts | undefined,
  n: number,
  cpu: { readonly scraping: number; readonly quiet: number },
  error?: string,
): MetricsProbe {
  const answered = scrapes.filter((s) => s.status === 200);
  const sorted = answered.map((s) => s.ms).sort((a, b) => a - b);
  const orNull = (v: number | undefined): number | null => (v === undefined || !Number.isFinite(v) ? null : v);
  const perCr = (v: number | undefined): number | null => (v === undefined || n === 0 ? null : v / n);
  const last = answered[answered.length - 1];
  const firstFailure = scrapes.find((s) => s.status !== 200);
  const reason = error ?? (firstFailure === undefined ? undefined : `GET /metrics answered ${String(firstFailure.status)}`);
  return {
    scrapes: scrapes.length,
    ok: answered.length,
    medianMs: orNull(percentile(sorted, 50)),
    maxMs: orNull(sorted[sorted.length - 1]),
    firstMs: orNull(answered[0]?.ms),
    bytes: last?.bytes ?? 0,
    series: counts?.series ?? 0,
    chartpilotSeries: counts?.chartpilotSeries ?? 0,
    chartpilotSeriesPerCr: perCr(counts?.chartpilotCrSeries),
    seriesPerCr: perCr(counts?.crSeries),
    crsSeen: counts?.crs ?? 0,
    operatorCpuMsPerScrape: scrapes.length === 0 ? null : orNull((cpu.scraping * 1000) / scrapes.length),
    operatorCpuMsPerScrapeNet: scrapes.length === 0 ? null : orNull((Math.max(0, cpu.scraping - cpu.quiet) * 1000) / scrapes.length),
    ...(reason === undefined ? {} : { error: reason }),
  };
}

// ---------------------------------------------------------------------------------------------

/** GET https://127.0.0.1:<port>/metrics with the token; the certificate is self-signed (not verified). */
function scrapeOnce(port: number, token: string): Promise<Scrape & { body: string }> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const req = request(
      { host: '127.0.0.1', port, path: '/metrics', headers: { Authorization: `Bearer ${token}` }, rejectUnauthorized: false, agent: false, timeout: 30_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          resolve({ status: res.statusCode ?? 0, ms: performance.now() - start, bytes: body.length, body: body.toString('utf8') });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('GET /metrics: no answer within 30 s')));
    req.on('error', reject);
    req.end();
  });
}

/** `count` scrapes one after another, the operator's CPU read from /proc around them all. */
export async function probeMetrics(target: MetricsTarget, n: number, count = 10): Promise<MetricsProbe> {
  const scrapes: Scrape[] = [];
  let counts: SeriesCounts | undefined;
  let error: string | undefined;
  const cpuNow = (): number => readStat(target.pid)?.self ?? Number.NaN;
  const before = cpuNow();
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    try {
      const s = await scrapeOnce(target.port, target.token);
      scrapes.push({ status: s.status, ms: s.ms, bytes: s.bytes });
      if (s.status === 200) counts = countSeries(s.body);
    } catch (err) {
      error ??= err instanceof Error ? err.message : String(err);
      break;
    }
  }
  const after = cpuNow();
  // As long again without scrapes: the operator's own background after a wave, to subtract.
  await sleep(performance.now() - started);
  const quiet = cpuNow() - after;
  return summarizeProbe(scrapes, counts, n, { scraping: after - before, quiet }, error);
}

const READER_ROLE = 'chartpilot-bench-metrics-reader';
const READER_ACCOUNT = 'metrics-reader';

/**
 * What docs/operations/monitoring.md has users do for a scraper: a ServiceAccount, a ClusterRole allowing `get` on
 * /metrics (the generated `metrics-reader`) bound to it, and a token from the TokenRequest API.
 * Idempotent; the namespace's deletion takes the ServiceAccount, the control plane the rest.
 */
export async function metricsReaderToken(kube: BenchKube, namespace: string): Promise<string> {
  await kube.json('POST', `/api/v1/namespaces/${namespace}/serviceaccounts`, {
    body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: READER_ACCOUNT } }, allow: [409],
  });
  await kube.json('POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', {
    body: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: READER_ROLE }, rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }] },
    allow: [409],
  });
  const binding = `${READER_ROLE}-${namespace}`;
  await kube.json('POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    body: {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: binding },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: READER_ROLE },
      subjects: [{ kind: 'ServiceAccount', name: READER_ACCOUNT, namespace }],
    },
    allow: [409],
  });
  const answer = await kube.json<{ status?: { token?: string } }>('POST', `/api/v1/namespaces/${namespace}/serviceaccounts/${READER_ACCOUNT}/token`, {
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 3600 } },
  });
  const token = answer?.status?.token;
  if (token === undefined || token === '') throw new Error(`the TokenRequest for ServiceAccount ${namespace}/${READER_ACCOUNT} returned no token`);
  return token;
}

/** The port of the operator's log line `metrics server listening` (it binds port 0). */
export function metricsPortOf(logLine: string | undefined): number | undefined {
  if (logLine === undefined) return undefined;
  try {
    const address = (JSON.parse(logLine) as { address?: unknown }).address;
    const m = typeof address === 'string' ? /:(\d+)$/.exec(address) : null;
    return m === null ? undefined : Number(m[1]);
  } catch {
    return undefined;
  }
}
