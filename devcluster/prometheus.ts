// A real Prometheus on loopback next to the control plane (Debian's `prometheus` package): it
// scrapes chartpilot's /metrics over HTTPS with a bearer token, as docs/operations/monitoring.md tells users to, and
// evaluates rule files (e.g. those of `chartpilot generate monitoring`). Short scrape and
// evaluation intervals so tests see a change within a second or two. Stopped with its owner (a
// reaper), like the registry.
//
// The state dir holds: prometheus.yml, token (0600), rules/, data/, prometheus.log, pids.
import { existsSync } from 'node:fs';
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { fetchText } from './http.js';
import { isOurs, killReaper, spawnDaemon, spawnReaper, tail, terminate, type Daemon } from './processes.js';
import { freePort } from './ports.js';

export interface PrometheusOptions {
  /** State dir; created if missing. */
  readonly dir: string;
  /** The job's name (`job` label of every scraped series). */
  readonly job: string;
  /** What to scrape over HTTPS (`host:port`); the certificate is not verified (chartpilot's is self-signed). */
  readonly target: string;
  /** The bearer token each scrape presents (kept in a 0600 file, never on a command line). */
  readonly token: string;
  /** Rule files' contents by file name (e.g. `rules.yml`). */
  readonly rules?: Readonly<Record<string, string>>;
  /** Scrape and evaluation interval; default 1s. */
  readonly interval?: string;
  /** The prometheus binary; default PROMETHEUS_BIN, else /usr/bin/prometheus. */
  readonly bin?: string;
  /** Whose death stops it (a detached reaper); default this process. */
  readonly ownerPid?: number;
}

/** One sample of an instant query's vector result. */
export interface Sample {
  readonly metric: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface PrometheusAlert {
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly state: 'pending' | 'firing';
}

export interface Prometheus {
  readonly dir: string;
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** An instant query; a scalar result is one sample without labels. Rejects on a query error. */
  query(expr: string): Promise<Sample[]>;
  /** Alerts pending or firing now. */
  alerts(): Promise<PrometheusAlert[]>;
  /** The scrape target's health and last error, as /api/v1/targets says. */
  target(): Promise<{ health: string; lastError: string } | undefined>;
  /** Stops it and deletes the state dir. */
  destroy(): Promise<void>;
}

/** The binary: PROMETHEUS_BIN, else Debian's. */
export function prometheusBin(): string {
  return process.env['PROMETHEUS_BIN'] ?? '/usr/bin/prometheus';
}

/** The prometheus.yml for `o`: one HTTPS job with a token file, the rule files, short intervals. */
export function prometheusConfig(o: { job: string; target: string; tokenFile: string; ruleFiles: readonly string[]; interval: string }): string {
  return stringify({
    global: { scrape_interval: o.interval, scrape_timeout: o.interval, evaluation_interval: o.interval },
    rule_files: o.ruleFiles,
    scrape_configs: [
      {
        job_name: o.job,
        scheme: 'https',
        // As the plain scrape config of docs/operations/monitoring.md: a token from a file, the self-signed certificate not verified.
        authorization: { credentials_file: o.tokenFile },
        tls_config: { insecure_skip_verify: true },
        static_configs: [{ targets: [o.target] }],
      },
    ],
  });
}

/** Starts Prometheus in opts.dir and resolves once it is ready (/-/ready). */
export async function startPrometheus(opts: PrometheusOptions): Promise<Prometheus> {
  const dir = resolve(opts.dir);
  const bin = opts.bin ?? prometheusBin();
  if (!existsSync(bin)) throw new Error(`${bin} is missing: install Debian's prometheus package (apt-get install prometheus), or set PROMETHEUS_BIN`);
  await mkdir(join(dir, 'data'), { recursive: true });
  await mkdir(join(dir, 'rules'), { recursive: true });
  const tokenFile = join(dir, 'token');
  await writeFile(tokenFile, opts.token, { mode: 0o600 });
  await chmod(tokenFile, 0o600);
  const ruleFiles: string[] = [];
  for (const [name, text] of Object.entries(opts.rules ?? {})) {
    const file = join(dir, 'rules', name);
    await writeFile(file, text);
    ruleFiles.push(file);
  }
  const configFile = join(dir, 'prometheus.yml');
  const interval = opts.interval ?? '1s';
  await writeFile(configFile, prometheusConfig({ job: opts.job, target: opts.target, tokenFile, ruleFiles, interval }));
  const port = await freePort();
  const url = `http://127.0.0.1:${String(port)}`;
  const logFile = join(dir, 'prometheus.log');
  const daemon: Daemon = spawnDaemon(
    bin,
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${join(dir, 'data')}/`,
      '--storage.tsdb.retention.time=1d',
      `--web.listen-address=127.0.0.1:${String(port)}`,
      `--web.console.templates=${join(dir, 'consoles')}/`,
      `--web.console.libraries=${join(dir, 'console_libraries')}/`,
      '--log.level=warn',
    ],
    logFile,
  );
  await writeFile(join(dir, 'pids'), `${String(daemon.pid)}\n`);
  const reaper = spawnReaper(opts.ownerPid ?? process.pid, dir);
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (daemon.exited !== undefined) throw new Error(`prometheus exited at start:\n${tail(logFile)}`);
    const status = await fetchText(`${url}/-/ready`, { timeoutMs: 2000 }).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) break;
    if (Date.now() > deadline) throw new Error(`prometheus not ready on ${url} after 60 s:\n${tail(logFile)}`);
    await sleep(100);
  }

  const api = async <T>(path: string): Promise<T> => {
    const r = await fetchText(`${url}${path}`, { timeoutMs: 10_000 });
    const body = JSON.parse(r.body) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`prometheus ${path}: ${body.error ?? r.body}`);
    return body.data;
  };
  return {
    dir,
    url,
    query: async (expr) => {
      const data = await api<{ resultType: string; result: unknown }>(`/api/v1/query?query=${encodeURIComponent(expr)}`);
      if (data.resultType === 'scalar') return [{ metric: {}, value: Number((data.result as [number, string])[1]) }];
      if (data.resultType !== 'vector') throw new Error(`prometheus query ${expr}: a ${data.resultType}, not a vector`);
      return (data.result as { metric: Record<string, string>; value: [number, string] }[]).map((s) => ({ metric: s.metric, value: Number(s.value[1]) }));
    },
    alerts: async () => (await api<{ alerts: PrometheusAlert[] }>('/api/v1/alerts')).alerts,
    target: async () => {
      const data = await api<{ activeTargets: { health: string; lastError: string }[] }>('/api/v1/targets');
      const t = data.activeTargets[0];
      return t === undefined ? undefined : { health: t.health, lastError: t.lastError };
    },
    destroy: async () => {
      await terminate([daemon.pid], dir, 5000);
      if (isOurs(reaper, dir)) killReaper(reaper, dir);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
