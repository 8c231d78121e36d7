/**
 * `/healthz` (liveness) and `/readyz` (readiness), in the format of controller-runtime's healthz
 * handler (itself Kubernetes'): `ok` when every check passes; otherwise 500 with one `[+]`/`[-]`
 * line per check. `?verbose` lists the checks on success too, `?exclude=<name>` skips one, and
 * `/healthz/<name>` runs a single check.
 */
import type { ServerResponse } from 'node:http';
import { realClock, type Clock, type TimerHandle } from '../lib/clock.js';
import { notFound, pathOf, refuseNonGet, startHttpServer, type ConnectionLimits, type ListenAddress, type RunningServer } from './http-server.js';
import { errorMessage } from '../lib/errors.js';

/** `true` when healthy; otherwise why not (shown to whoever probes, so never secrets). */
export type CheckResult = true | string;
export type HealthCheck = () => CheckResult;

export interface HealthChecks {
  readonly healthz: Readonly<Record<string, HealthCheck>>;
  readonly readyz: Readonly<Record<string, HealthCheck>>;
}

/**
 * The probe listener's limits, apart from the metrics server's. The kubelet opens a new
 * connection per probe, sends its request at once and is answered at once (every check is a
 * lookup), so anything slower than half a second is not the kubelet and loses its connection: a
 * flood from one peer then holds at most its share, each for well under a second, and the
 * kubelet's next probe finds a slot. The overall cap bounds the file descriptors many peers
 * together can take (peer-admission.ts: filling it takes 64 distinct addresses).
 */
export const PROBE_LIMITS: ConnectionLimits = {
  maxConnections: 64,
  // Liveness, readiness and a startup probe may overlap: room for them with one to spare.
  maxPerPeer: 4,
  timeouts: { headersMs: 500, requestMs: 500, keepAliveMs: 250, idleMs: 500, handshakeMs: 500, checkEveryMs: 100 },
};

export async function startHealthServer(address: ListenAddress, checks: HealthChecks, limits: ConnectionLimits = PROBE_LIMITS): Promise<RunningServer> {
  return startHttpServer('health probe server', address, (req, res) => {
    if (refuseNonGet(req, res)) return;
    const { path, query } = pathOf(req);
    const [, endpoint, single, ...rest] = path.split('/');
    if ((endpoint !== 'healthz' && endpoint !== 'readyz') || rest.length > 0) {
      notFound(res);
      return;
    }
    const all = checks[endpoint];
    if (single !== undefined && single !== '') {
      const check = all[single];
      if (check === undefined) {
        notFound(res);
        return;
      }
      const result = run(check);
      send(res, result === true ? 200 : 500, result === true ? 'ok' : `internal server error: ${result}`);
      return;
    }
    const excluded = new Set(query.getAll('exclude'));
    const lines: string[] = [];
    let failed = false;
    for (const [name, check] of Object.entries(all)) {
      if (excluded.has(name)) continue;
      const result = run(check);
      if (result === true) lines.push(`[+]${name} ok`);
      else {
        failed = true;
        lines.push(`[-]${name} failed: ${result}`);
      }
    }
    if (failed) send(res, 500, `${lines.join('\n')}\n${endpoint} check failed`);
    else if (query.has('verbose')) send(res, 200, `${lines.join('\n')}\n${endpoint} check passed`);
    else send(res, 200, 'ok');
  }, limits);
}

function run(check: HealthCheck): CheckResult {
  try {
    return check();
  } catch (err) {
    return errorMessage(err);
  }
}

function send(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store' });
  res.end(`${body}\n`);
}

export interface EventLoopWatchdogOptions {
  /** How often the heartbeat timer is meant to fire; default 1 s. */
  readonly intervalMs?: number;
  /** A heartbeat later than this (beyond its interval) means the event loop is not keeping up; default 5 s. */
  readonly maxLagMs?: number;
  readonly clock?: Clock;
}

/**
 * Liveness beyond "the probe got an answer": a heartbeat timer measures how late timers fire. A
 * process whose event loop is saturated (timers running seconds late) still answers a probe now
 * and then, but cannot renew its lease or run its queue on time: that is what this reports.
 * It recovers by itself as soon as a heartbeat is on time again, so one long pause costs one
 * failed probe, not a restart.
 */
export class EventLoopWatchdog {
  private readonly intervalMs: number;
  private readonly maxLagMs: number;
  private readonly clock: Clock;
  private timer: TimerHandle | undefined;
  private expectedAt = 0;
  private lastLagMs = 0;

  constructor(opts: EventLoopWatchdogOptions = {}) {
    this.intervalMs = opts.intervalMs ?? 1000;
    this.maxLagMs = opts.maxLagMs ?? 5000;
    this.clock = opts.clock ?? realClock;
  }

  start(): void {
    if (this.timer !== undefined) return;
    this.schedule();
  }

  stop(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** The `healthz` check. */
  readonly check: HealthCheck = () => {
    // A heartbeat that is overdue right now counts too: the loop may be busy with a long run of
    // other callbacks, and this probe slipped in between them.
    const overdue = this.timer === undefined ? 0 : this.clock.now() - this.expectedAt;
    const lag = Math.max(this.lastLagMs, overdue);
    return lag > this.maxLagMs ? `event loop is ${Math.round(lag)} ms behind (limit ${this.maxLagMs} ms)` : true;
  };

  private schedule(): void {
    this.expectedAt = this.clock.now() + this.intervalMs;
    this.timer = this.clock.setTimeout(() => {
      this.lastLagMs = Math.max(0, this.clock.now() - this.expectedAt);
      this.schedule();
    }, this.intervalMs);
  }
}
