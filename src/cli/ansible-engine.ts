/**
 * The Ansible engine of `chartpilot run`: the runtime found (or one line naming how to install it),
 * the runs' API proxy on loopback (--proxy-port), the osdk_metric listener (:5050), and the run
 * settings from ansible-operator's flags. Started only when watches.yaml has an Ansible kind.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { AnsibleEngine } from '../controller/manager.js';
import { extraVarsFor, redactionStringsFor } from '../engines/ansible/extra-vars.js';
import type { ApiProxy } from '../apiproxy/index.js';
import { startUserMetricsServer } from '../engines/ansible/user-metrics.js';
import { roleDigest } from '../engines/ansible/role-digest.js';
import { runAnsible } from '../engines/ansible/runner.js';
import { AnsibleRuntimeMissingError, findAnsibleRuntime } from '../engines/ansible/runtime.js';
import type { KubeClient } from '../kube/rest.js';
import { errorMessage } from '../lib/errors.js';
import type { AnsibleRunOptions } from './args.js';
import { PreflightError } from './preflight.js';

export interface StartedAnsibleEngine {
  readonly engine: AnsibleEngine;
  close(): Promise<void>;
}

export interface AnsibleEngineOptions {
  readonly options: AnsibleRunOptions;
  readonly client: KubeClient;
  readonly log: Logger;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Where osdk_metric's metrics are served (the operator's /metrics registry). */
  readonly registry: Registry;
  /** The operator's metric names served outside `registry` (no role may take them). */
  readonly reservedMetricNames?: readonly string[];
  /** The operator's API proxy (started by `run`): the runs' only way to the API server. */
  readonly proxy: ApiProxy;
  readonly onRun: AnsibleEngine['onRun'];
}

/** Rejects with a PreflightError (one line each) when the runtime is missing or a port is taken. */
export async function startAnsibleEngine(o: AnsibleEngineOptions): Promise<StartedAnsibleEngine> {
  const runtime = await findAnsibleRuntime(o.env).catch((err: unknown) => {
    throw err instanceof AnsibleRuntimeMissingError ? new PreflightError([err.message]) : err;
  });
  o.log.info({ runtime: runtime.dir, source: runtime.source, ansibleCore: runtime.versions.ansibleCore, ansibleRunner: runtime.versions.ansibleRunner }, 'Ansible runtime found');
  const proxy = o.proxy;
  const userMetrics = await startUserMetricsServer({ registry: o.registry, reservedNames: o.reservedMetricNames, log: o.log.child({ component: 'osdk-metric' }) }).catch((err: unknown) => {
    // Roles that never call osdk_metric work without it; say so once.
    o.log.warn({ err: errorMessage(err) }, 'the osdk_metric listener (127.0.0.1:5050) could not start; roles calling operator_sdk.util.osdk_metric will fail');
    return undefined;
  });
  const engine: AnsibleEngine = {
    runs: { run: runAnsible },
    proxy,
    extraVars: (cr, target, extra) => extraVarsFor(cr as unknown as Record<string, unknown>, target.source, target.gvk, extra),
    secrets: (cr, target) => redactionStringsFor(cr as unknown as Record<string, unknown>, target.gvk),
    runtime: () => Promise.resolve({ ansibleRunner: runtime.ansibleRunner, python: runtime.python, collectionsPath: runtime.collectionsPath }),
    settings: {
      verbosity: o.options.verbosity,
      extraArgs: o.options.args,
      rolesPath: o.options.rolesPath,
      collectionsPath: o.options.collectionsPath,
      injectOwnerRef: o.options.injectOwnerRef,
      timeoutMs: o.options.runTimeoutMs,
      artifactsDir: join(tmpdir(), 'chartpilot-ansible-artifacts'),
    },
    digest: (runnable) => roleDigest(runnable),
    onRun: o.onRun,
  };
  return {
    engine,
    close: async () => {
      await userMetrics?.close();
    },
  };
}
