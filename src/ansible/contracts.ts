/**
 * TEMPORARY: the shapes of the run edge (E1: runner.ts) and the per-run API proxy (P:
 * proxy/index.ts) as agreed, until those land on main; then this file goes and the imports point
 * at the real modules.
 */
import type { AnsibleRunnable } from '../config/types.js';
import type { Confinement } from '../reconcile/ports.js';

export interface AnsibleRuntimePaths {
  readonly ansibleRunner: string;
  readonly python: string;
  readonly collectionsPath: readonly string[];
}

export interface RunnerEvent {
  readonly event: string;
  readonly [k: string]: unknown;
}

export interface RunRequest {
  readonly runtime: AnsibleRuntimePaths;
  readonly runnable: AnsibleRunnable;
  readonly extraVars: Readonly<Record<string, unknown>>;
  readonly kubeconfig: string;
  readonly verbosity: number;
  readonly extraArgs: readonly string[];
  readonly rolesPath: readonly string[];
  readonly collectionsPath: readonly string[];
  readonly artifactsDir: string;
  readonly maxArtifacts: number;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  readonly secrets: readonly string[];
  readonly onEvent?: (e: RunnerEvent) => void;
}

export interface RunOutcome {
  readonly result: 'successful' | 'failed' | 'timeout' | 'canceled' | 'error';
  readonly stats: { readonly ok: number; readonly changed: number; readonly skipped: number; readonly failures: number };
  readonly failedTasks: readonly { readonly task: string; readonly message: string }[];
  readonly requeueAfterMs: number | undefined;
  readonly statusWrittenByRole: boolean;
  readonly message: string;
  readonly durationMs: number;
  readonly cpuMs?: number;
}

export interface RunContext {
  readonly owner: { readonly apiVersion: string; readonly kind: string; readonly name: string; readonly namespace: string; readonly uid: string };
  readonly confinement: Confinement;
  readonly impersonate?: string;
  readonly injectOwnerRef: boolean;
  readonly log: import('pino').Logger;
}

export interface RunAccess {
  readonly token: string;
  readonly kubeconfig: string;
  objects(): readonly { readonly apiVersion: string; readonly kind: string; readonly namespace?: string | undefined; readonly name: string; readonly action?: string }[];
  close(): void;
}
