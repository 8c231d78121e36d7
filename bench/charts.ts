/**
 * The charts every contender can be run with (`--chart`), and what the bench writes into each CR
 * (the floor: into its values file) per phase. The upgrade spec must change the pod template, so
 * that an upgrade is a real rollout and not a no-op release.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { Phase } from './contenders.js';
import { moduleChartDir, type ModuleChart } from './module-chart.js';

export type ChartName = 'webapp' | 'podinfo' | 'configmap';
export const CHART_NAMES: readonly ChartName[] = ['webapp', 'podinfo', 'configmap'];

export interface BenchChart {
  readonly name: ChartName;
  /** The chart directory relative to the repository root, or the module it is fetched from. */
  readonly source: { readonly dir: string } | { readonly module: ModuleChart };
  /** The operators' CRD kinds are `<kindPrefix>Osdk` and `<kindPrefix>Chartpilot`. */
  readonly kindPrefix: string;
  readonly specs: Readonly<Record<Phase, Readonly<Record<string, unknown>>>>;
  /** false: the chart has no Deployment, so there is no rollout to wait for after convergence. */
  readonly rollsOut?: boolean;
}

export const BENCH_CHARTS: Readonly<Record<ChartName, BenchChart>> = {
  webapp: {
    name: 'webapp',
    source: { dir: 'charts/webapp' },
    kindPrefix: 'WebApp',
    specs: {
      create: { message: 'bench revision 1', replicaCount: 1 },
      // A new message changes the ConfigMap and the pods' checksum annotation: a real rollout.
      upgrade: { message: 'bench revision 2', replicaCount: 1 },
      delete: {},
    },
  },
  // The public podinfo chart that Flux's benchmark installs, unchanged: charts/podinfo of
  // github.com/stefanprodan/podinfo (Apache-2.0) at commit e86405a8674e (2025-09-10), chart and
  // app version 6.9.2, from the Go module proxy's zip of that commit. Every other value at the
  // chart's defaults: a Deployment and a Service (how Flux's own values differ: bench/README.md).
  podinfo: {
    name: 'podinfo',
    source: {
      module: {
        module: 'github.com/stefanprodan/podinfo',
        version: 'v1.8.1-0.20250910200901-e86405a8674e',
        zipSha256: 'bdcbe8b25d74e9fc64db41f2b138212e38464b670d8917ca4b99c3a363100dbb',
        path: 'charts/podinfo',
      },
    },
    kindPrefix: 'Podinfo',
    specs: {
      create: { replicaCount: 1, ui: { message: 'bench revision 1' } },
      // ui.message is the container's PODINFO_UI_MESSAGE env var: a new pod template, a rollout.
      upgrade: { replicaCount: 1, ui: { message: 'bench revision 2' } },
      delete: {},
    },
  },
  // One ConfigMap, nothing for the control plane to roll out: 10,000 of them fit a shared 2-core
  // machine in one create wave, which is what the restart figure at that size needs.
  configmap: {
    name: 'configmap',
    source: { dir: 'bench/charts/configmap' },
    kindPrefix: 'Config',
    rollsOut: false,
    specs: {
      create: { message: 'bench revision 1' },
      upgrade: { message: 'bench revision 2' },
      delete: {},
    },
  },
};

/** The chart's folder: in the repository, or fetched (once, then cached) from the module proxy. */
export async function chartDir(root: string, chart: BenchChart, log: (line: string) => void): Promise<string> {
  return 'dir' in chart.source ? join(root, chart.source.dir) : await moduleChartDir(chart.source.module, log);
}

/** Chart.yaml's name and version. */
export function chartMeta(dir: string): { name: string; version: string } {
  const file = join(dir, 'Chart.yaml');
  if (!existsSync(file)) throw new Error(`${file} does not exist`);
  const meta = parseYaml(readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown } | null;
  const name = meta?.name;
  // YAML reads `version: 1.0` as a number.
  const version = typeof meta?.version === 'number' ? String(meta.version) : meta?.version;
  if (typeof name !== 'string' || typeof version !== 'string') throw new Error(`${file} has no name or version`);
  return { name, version };
}
