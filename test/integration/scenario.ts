// The setup most operator tests share, in one call: CRDs for the test's kinds, a fresh namespace,
// and the operator watching it.
//
//   const { cluster, ns, op, cr } = await operatorScenario(t, { kind: 'Pause', chart: HOOKED });
//   await cr.apply('p', { color: 'red' });
//   await cr.deployed('p');
//
//   const { crs: [web, cfg] } = await operatorScenario(t, { watches: [{ kind: 'Web', chart: A }, { kind: 'Cfg', chart: B }] });
import type { TestContext } from 'node:test';
import { installCrd, testKind, type TestKind } from './crd.js';
import { crsOf, type Crs } from './crs.js';
import { newNamespace, testCluster, type TestCluster } from './harness.js';
import { startOperator, type RunningOperator, type StartOptions } from './operator.js';

export interface KindSpec {
  /** The test kind's suffix (see testKind): unique across the test run. */
  readonly kind: string;
  readonly chart: string;
  /** More fields of its watches.yaml entry. */
  readonly extra?: Record<string, unknown>;
}

export type ScenarioOptions<W extends readonly KindSpec[]> = (KindSpec | { readonly watches: W }) & {
  /** The namespace's name prefix; the first kind's name by default. */
  readonly namespace?: string;
  /** How the operator runs (its namespace and watches come from the scenario). */
  readonly operator?: Omit<StartOptions, 'namespaces' | 'watches'>;
};

/** CRDs and a namespace, no operator yet. */
export interface Setup<W extends readonly KindSpec[] = readonly KindSpec[]> {
  readonly cluster: TestCluster;
  readonly ns: string;
  /** The first kind. */
  readonly kind: TestKind;
  /** Every kind, in the order of `watches`. */
  readonly kinds: { readonly [I in keyof W]: TestKind };
  /** An operator watching ns for the scenario's kinds, with its options and `overrides`. */
  start(overrides?: Partial<StartOptions>): Promise<RunningOperator>;
  /** Starts again in op's directory, on the watches.yaml there (after a stop, a kill or an edit). */
  restart(op: RunningOperator, overrides?: Partial<Omit<StartOptions, 'dir' | 'watches'>>): Promise<RunningOperator>;
}

export interface Scenario<W extends readonly KindSpec[] = readonly KindSpec[]> extends Setup<W> {
  readonly op: RunningOperator;
  /** The CRs of the first kind in ns (a failed wait shows op's log tail). */
  readonly cr: Crs;
  /** The CRs of every kind in ns, in the order of `kinds`. */
  readonly crs: { readonly [I in keyof W]: Crs };
}

/** CRDs for the scenario's kinds and a fresh namespace; the test starts the operator itself. */
export async function setUp<const W extends readonly KindSpec[]>(t: TestContext, opts: ScenarioOptions<W>): Promise<Setup<W>> {
  const specs: readonly KindSpec[] = 'watches' in opts ? opts.watches : [opts];
  const first = specs[0];
  if (first === undefined) throw new Error('a scenario needs at least one kind');
  const cluster = await testCluster();
  const watches = specs.map((s) => ({ kind: testKind(s.kind), chart: s.chart, ...(s.extra === undefined ? {} : { extra: s.extra }) }));
  for (const w of watches) await installCrd(cluster, w.kind);
  const ns = await newNamespace(t, opts.namespace ?? first.kind);
  const base: StartOptions = { ...opts.operator, namespaces: [ns], watches };
  return {
    cluster,
    ns,
    kind: testKind(first.kind),
    kinds: watches.map((w) => w.kind) as unknown as Setup<W>['kinds'],
    start: (overrides = {}) => startOperator(t, cluster, { ...base, ...overrides }),
    restart: (op, overrides = {}) => startOperator(t, cluster, { ...base, ...overrides, dir: op.dir, watches: [] }),
  };
}

/** setUp, and the operator started and serving ns. */
export async function operatorScenario<const W extends readonly KindSpec[]>(t: TestContext, opts: ScenarioOptions<W>): Promise<Scenario<W>> {
  const setup = await setUp(t, opts);
  const op = await setup.start();
  const crs = (setup.kinds as readonly TestKind[]).map((k) => crsOf(setup.cluster, k, setup.ns, op));
  return { ...setup, op, cr: crsOf(setup.cluster, setup.kind, setup.ns, op), crs: crs as unknown as Scenario<W>['crs'] };
}
