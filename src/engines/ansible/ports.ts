/**
 * The Ansible engine's ports: what its reconciler needs of the dependents' caches, of the run
 * edge (runner.ts) and of the per-run API proxy (apiproxy/), and nothing more. The shared ports
 * (CR writer, events, ServiceAccounts) are in core/ports.ts.
 */
import type { Logger } from 'pino';
import type { Confinement } from '../../core/confinement.js';
import type { ObjectRef } from '../../core/model.js';
import type { KubeObject } from '../../kube/types.js';
import type { RunOutcome, RunRequest } from './runner.js';

/** The dependents a CR's runs made, as the caches show them (cheap) or as the API server has them (a GET each). */
export interface DependentsView {
  /**
   * undefined when the caches cannot tell yet (kind not watchable, not synced in time), or, with
   * --shards, do not hold the objects of the owner with this uid (its share of the ring is moving).
   */
  cached(refs: readonly ObjectRef[], confinement: Confinement, ownerUid: string): Promise<readonly LiveObject[] | undefined>;
  fresh(refs: readonly ObjectRef[], confinement: Confinement): Promise<readonly LiveObject[]>;
}

export interface LiveObject {
  readonly ref: ObjectRef;
  readonly live: KubeObject | undefined;
}

/** The run edge (runner.ts) and the per-run proxy (proxy/), with exactly what the reconciler uses. */
export interface AnsibleRuns {
  run(req: RunRequest): Promise<RunOutcome>;
}
export interface RunProxy {
  openSession(ctx: RunContext): { readonly kubeconfig: string; objects(): readonly WrittenObject[]; close(): void };
}

/** One run, as the proxy needs to know it (apiproxy/proxy.ts SessionContext). */
export interface RunContext {
  /** The CR the run reconciles: ownerReferences name it. */
  readonly owner: { readonly apiVersion: string; readonly kind: string; readonly name: string; readonly namespace: string; readonly uid: string };
  readonly confinement: Confinement;
  /** Every request of the run is made as this user; undefined = the operator. */
  readonly impersonate?: string | undefined;
  readonly injectOwnerRef: boolean;
  readonly log: Logger;
}

/** An object a run created, updated or deleted through its proxy. */
export interface WrittenObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace?: string | undefined;
  readonly name: string;
  readonly action?: string | undefined;
}
