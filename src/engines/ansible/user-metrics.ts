/**
 * The endpoint `operator_sdk.util.osdk_metric` posts to (ansible-operator's fixed
 * `127.0.0.1:5050`, `POST /metrics`), registering the role's own counters, gauges, histograms and
 * summaries in the operator's registry, so they are scraped with the rest. Body, as
 * ansible-operator reads it: `{name, description, counter: {increment, add} | gauge: {set,
 * increment, decrement, set_to_current_time, add, subtract} | histogram: {observe} | summary:
 * {observe}}`. Unlike ansible-operator, names are validated, may not shadow the operator's own
 * metrics, and their number is bounded: a role cannot grow the scrape without limit.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { Counter, Gauge, Histogram, Summary, type Registry } from 'prom-client';
import { getOwn, isPlainMap, type PlainMap } from '../../lib/json.js';
import { DEFAULT_TIMEOUTS, pathOf, startHttpServer, type RunningServer } from '../../observe/http-server.js';

/** ansible-operator's port for osdk_metric. */
export const DEFAULT_USER_METRICS_PORT = 5050;
export const DEFAULT_MAX_USER_METRICS = 100;
const MAX_BODY_BYTES = 16 * 1024;
const MAX_HELP_LENGTH = 200;
const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]{0,199}$/u;

type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary';
const TYPES: readonly MetricType[] = ['counter', 'gauge', 'histogram', 'summary'];

type Entry =
  | { readonly type: 'counter'; readonly metric: Counter }
  | { readonly type: 'gauge'; readonly metric: Gauge }
  | { readonly type: 'histogram'; readonly metric: Histogram }
  | { readonly type: 'summary'; readonly metric: Summary };

export class UserMetricError extends Error {
  override readonly name = 'UserMetricError';
}

/** The role-defined metrics in one registry. */
export class UserMetrics {
  private readonly metrics = new Map<string, Entry>();

  constructor(
    private readonly registry: Registry,
    private readonly maxMetrics = DEFAULT_MAX_USER_METRICS,
    /** Names the operator serves outside the registry. */
    private readonly reserved: ReadonlySet<string> = new Set(),
  ) {}

  /** Applies one osdk_metric post; throws UserMetricError with a message for the role's author. */
  apply(post: unknown): void {
    if (!isPlainMap(post)) throw new UserMetricError('the body must be a JSON object with name, description and one of counter, gauge, histogram, summary');
    const name = getOwn(post, 'name');
    if (typeof name !== 'string' || !METRIC_NAME.test(name)) {
      throw new UserMetricError(`metric name ${JSON.stringify(name)} is invalid: use letters, digits, '_' and ':' (not starting with a digit), at most 200 characters`);
    }
    const given = TYPES.filter((t) => getOwn(post, t) !== undefined && getOwn(post, t) !== null);
    if (given.length !== 1) throw new UserMetricError(`metric ${name}: give exactly one of counter, gauge, histogram, summary (got ${given.length})`);
    const type = given[0] as MetricType;
    const spec = getOwn(post, type);
    if (!isPlainMap(spec)) throw new UserMetricError(`metric ${name}: ${type} must be an object`);
    const entry = this.ensure(name, type, getOwn(post, 'description'));
    switch (entry.type) {
      case 'counter': {
        const add = num(spec, 'add', name);
        if (add !== undefined && add < 0) throw new UserMetricError(`metric ${name}: a counter cannot decrease (add ${add})`);
        if (getOwn(spec, 'increment') === true) entry.metric.inc();
        else if (add !== undefined) entry.metric.inc(add);
        return;
      }
      case 'gauge': {
        const g = entry.metric;
        const [set, add, sub] = [num(spec, 'set', name), num(spec, 'add', name), num(spec, 'subtract', name)];
        // ansible-operator's precedence, one action per post; unlike it, `set: 0` sets 0.
        if (getOwn(spec, 'increment') === true) g.inc();
        else if (getOwn(spec, 'decrement') === true) g.dec();
        else if (add !== undefined) g.inc(add);
        else if (sub !== undefined) g.dec(sub);
        else if (set !== undefined) g.set(set);
        else if (getOwn(spec, 'set_to_current_time') === true) g.setToCurrentTime();
        return;
      }
      case 'histogram':
      case 'summary': {
        // An empty operation (`histogram: {}`) registers the metric and changes nothing.
        const observed = num(spec, 'observe', name);
        if (observed !== undefined) entry.metric.observe(observed);
        return;
      }
    }
  }

  private ensure(name: string, type: MetricType, description: unknown): Entry {
    const known = this.metrics.get(name);
    if (known !== undefined) {
      if (known.type !== type) throw new UserMetricError(`metric ${name} is a ${known.type}; it cannot be used as a ${type}`);
      return known;
    }
    if (this.registry.getSingleMetric(name) !== undefined || this.reserved.has(name)) throw new UserMetricError(`metric ${name} is one of the operator's own; choose another name`);
    if (this.metrics.size >= this.maxMetrics) throw new UserMetricError(`metric ${name} refused: roles may define at most ${this.maxMetrics} metrics`);
    const help = typeof description === 'string' && description !== '' ? description.slice(0, MAX_HELP_LENGTH) : name;
    const opts = { name, help, registers: [this.registry] };
    const entry: Entry =
      type === 'counter'
        ? { type, metric: new Counter(opts) }
        : type === 'gauge'
          ? { type, metric: new Gauge(opts) }
          : type === 'histogram'
            ? { type, metric: new Histogram(opts) }
            : { type, metric: new Summary(opts) };
    this.metrics.set(name, entry);
    return entry;
  }
}

function num(spec: PlainMap, key: string, name: string): number | undefined {
  const v = getOwn(spec, key);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new UserMetricError(`metric ${name}: ${key} must be a finite number`);
  return v;
}

export interface UserMetricsServerOptions {
  readonly registry: Registry;
  readonly log: Logger;
  /** On 127.0.0.1; default 5050 (ansible-operator's); 0 = any free port. */
  readonly port?: number | undefined;
  readonly maxMetrics?: number | undefined;
  /** The operator's own metric names served outside the registry (OperatorMetrics.ownTextFamilies). */
  readonly reservedNames?: readonly string[] | undefined;
}

/** Starts the osdk_metric listener on 127.0.0.1. Rejects with a ListenError (e.g. the port is taken). */
export async function startUserMetricsServer(opts: UserMetricsServerOptions): Promise<RunningServer> {
  const metrics = new UserMetrics(opts.registry, opts.maxMetrics ?? DEFAULT_MAX_USER_METRICS, new Set(opts.reservedNames ?? []));
  const port = opts.port ?? DEFAULT_USER_METRICS_PORT;
  const handler = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (pathOf(req).path !== '/metrics') {
      reply(res, 404, 'not found: osdk_metric posts to /metrics');
      return;
    }
    if (req.method !== 'POST') {
      reply(res, 405, 'method not allowed: osdk_metric posts to /metrics');
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reply(res, 413, `the body is larger than ${MAX_BODY_BYTES} bytes`);
        return;
      }
      chunks.push(chunk);
    }
    let post: unknown;
    try {
      post = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      reply(res, 400, 'the body is not JSON');
      return;
    }
    try {
      metrics.apply(post);
    } catch (err) {
      if (!(err instanceof UserMetricError)) throw err;
      opts.log.info({ reason: err.message }, 'osdk_metric post refused');
      reply(res, 400, err.message);
      return;
    }
    reply(res, 200, 'ok');
  };
  return startHttpServer('osdk_metric endpoint', { host: '127.0.0.1', port, text: `127.0.0.1:${port}` }, handler, {
    maxConnections: 64,
    // Loopback only: every caller is a run's module in this pod, all of them one peer.
    maxPerPeer: 64,
    timeouts: DEFAULT_TIMEOUTS,
  });
}

function reply(res: ServerResponse, code: number, text: string): void {
  res.writeHead(code, { 'Content-Type': 'text/plain; charset=utf-8' });
  res.end(`${text}\n`);
}
