/**
 * Starts the metrics and health probe servers of `chartpilot run` (either may be disabled with
 * bind address `0`) and logs where each really listens, so port 0 is usable by tests and tools.
 */
import type { Logger } from 'pino';
import { EventLoopWatchdog, startHealthServer, type HealthCheck } from './health-server.js';
import type { ListenAddress, RunningServer } from './http-server.js';
import { startMetricsServer } from './metrics-server.js';
import type { OperatorMetrics } from './metrics.js';

export interface ServersOptions {
  readonly metrics: OperatorMetrics;
  readonly metricsAddress: ListenAddress | undefined;
  readonly healthAddress: ListenAddress | undefined;
  /** The `/readyz` check. */
  readonly ready: HealthCheck;
  readonly log: Logger;
}

export interface Servers {
  close(): Promise<void>;
}

/** Throws ListenError (after closing whatever did start) when an address cannot be bound. */
export async function startServers(opts: ServersOptions): Promise<Servers> {
  const running: RunningServer[] = [];
  const watchdog = new EventLoopWatchdog();
  const close = async (): Promise<void> => {
    watchdog.stop();
    await Promise.all(running.map((s) => s.close()));
  };
  try {
    if (opts.metricsAddress !== undefined) {
      const s = await startMetricsServer(opts.metricsAddress, opts.metrics);
      running.push(s);
      opts.log.info({ address: s.address }, 'metrics server listening');
    }
    if (opts.healthAddress !== undefined) {
      watchdog.start();
      const s = await startHealthServer(opts.healthAddress, {
        healthz: { 'event-loop': watchdog.check },
        readyz: { informers: opts.ready },
      });
      running.push(s);
      opts.log.info({ address: s.address }, 'health probe server listening');
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { close };
}
