/**
 * The charts every contender can be run with (`--chart`), and what the bench writes into each CR
 * (the floor: into its values file) per phase. The upgrade spec must change the pod template, so
 * that an upgrade is a real rollout and not a no-op release.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { Phase } from './contenders.js';

export type ChartName = 'webapp' | 'podinfo';
export const CHART_NAMES: readonly ChartName[] = ['webapp', 'podinfo'];

export interface BenchChart {
  readonly name: ChartName;
  /** The chart directory, relative to the repository root. */
  readonly dir: string;
  /** The operators' CRD kinds are `<kindPrefix>Osdk` and `<kindPrefix>Chartpilot`. */
  readonly kindPrefix: string;
  readonly specs: Readonly<Record<Phase, Readonly<Record<string, unknown>>>>;
}

export const BENCH_CHARTS: Readonly<Record<ChartName, BenchChart>> = {
  webapp: {
    name: 'webapp',
    dir: 'charts/webapp',
    kindPrefix: 'WebApp',
    specs: {
      create: { message: 'bench revision 1', replicaCount: 1 },
      // A new message changes the ConfigMap and the pods' checksum annotation: a real rollout.
      upgrade: { message: 'bench revision 2', replicaCount: 1 },
      delete: {},
    },
  },
  // The public podinfo chart that Flux's benchmark installs, vendored unchanged
  // (bench/fixtures/README.md); every other value at the chart's defaults: a Deployment and a
  // Service (how Flux's own values differ: bench/README.md, "Flux-comparable run").
  podinfo: {
    name: 'podinfo',
    dir: 'bench/fixtures/podinfo',
    kindPrefix: 'Podinfo',
    specs: {
      create: { replicaCount: 1, ui: { message: 'bench revision 1' } },
      // ui.message is the container's PODINFO_UI_MESSAGE env var: a new pod template, a rollout.
      upgrade: { replicaCount: 1, ui: { message: 'bench revision 2' } },
      delete: {},
    },
  },
};

/** Chart.yaml's name and version; an error that says what to do when the chart is not there. */
export function chartMeta(root: string, chart: BenchChart): { name: string; version: string } {
  const file = join(root, chart.dir, 'Chart.yaml');
  if (!existsSync(file)) {
    throw new Error(`${chart.dir}/Chart.yaml does not exist: the ${chart.name} chart is not in this checkout`
      + (chart.dir.startsWith('bench/fixtures/') ? ' (bench/fixtures/README.md says where it comes from and how to vendor it)' : ''));
  }
  const meta = parseYaml(readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown } | null;
  const name = meta?.name;
  // YAML reads `version: 1.0` as a number.
  const version = typeof meta?.version === 'number' ? String(meta.version) : meta?.version;
  if (typeof name !== 'string' || typeof version !== 'string') throw new Error(`${chart.dir}/Chart.yaml has no name or version`);
  return { name, version };
}
