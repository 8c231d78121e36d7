/**
 * `chartpilot new`: a new operator repository for one chart — watches.yaml, the chart, a
 * Dockerfile `FROM` the chartpilot image, and deploy/ with CRD, RBAC, Deployment and a sample.
 * Everything is checked (and helm run) before the first file is written, so a refusal leaves no
 * half-made directory behind.
 */
import { developSection, projectMakefile } from './makefile.js';
import { cp, mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { stringify } from 'yaml';
import { Scalar } from 'yaml';
import { checkChart } from '../config/chart-check.js';
import { isOciReference, readRemoteChart, type RemoteChartKey } from '../config/remote-chart-entry.js';
import type { RemoteChart, WatchEntry } from '../config/types.js';
import type { Field } from '../config/yaml-nodes.js';
import { pullRemoteCharts } from './remote-charts.js';
import { loadChartInfo } from './chart-meta.js';
import { gvkProblems } from './crd.js';
import { defaultImage, deployOptionProblems, IMAGE_HOME, packageVersion } from './deploy.js';
import { metricsNames } from './metrics.js';
import { pluralOf } from './kind-names.js';
import { EnvironmentError, InputError } from './errors.js';
import type { HelmRenderer } from './helm-render.js';
import { tableResolver } from './rbac-plan.js';
import { monitoringDefaults, renderBundle, type Env } from './render.js';
import { monitoringFiles } from './monitoring-cli.js';
import { DEFAULT_MONITORING_NAMESPACE } from './network-policy.js';
import { errorMessage } from '../lib/errors.js';

export const NEW_HELP = `Usage: chartpilot new <dir> --chart <path> --group <group> --kind <Kind> [flags]

Creates a new operator repository in <dir> (which must not exist or be empty) that serves the
chart as the API <Kind>.<version>.<group>:

  watches.yaml          maps the kind to the chart
  charts/<chart>/       a copy of the chart (a packaged .tgz is copied as is)
  Dockerfile            FROM the chartpilot image, adding watches.yaml and charts/
  deploy/               CRD (schema from values.schema.json), least-privilege RBAC, the operator
                        Deployment and its metrics Service, a sample CR (spec = the chart's
                        values.yaml) and a Kustomization
  monitoring/           alerts (a PrometheusRule, a plain rule file) and a Grafana dashboard
  README.md             how to build, deploy and regenerate

Flags:
  --chart <path>        the chart directory or packaged .tgz, or oci://<host>/<path>/<chart>, or a
                        chart name with --repository (required). A chart from a registry is not
                        copied: watches.yaml names it, and the operator pulls it at run time
  --repository <url>    the HTTP(S) Helm repository --chart is in
  --chart-version <v>   the chart version or semver range (e.g. ^1.4) for a chart from a registry
  --group <group>       the API group, a domain you own, e.g. apps.example.com (required)
  --version <version>   the API version (default v1alpha1)
  --kind <Kind>         the kind, CamelCase, e.g. WebApp (required)
  --name <name>         the operator's name (default <chart>-operator): Deployment, namespace <name>-system
  --image <ref>         the operator image to build and deploy (default <name>:0.1.0)
  --base-image <ref>    the chartpilot image to build FROM (default ${defaultImage()})
  -h, --help            show this help

Environment: HELM_BIN, the helm binary used to render the chart for RBAC (default: helm on PATH).

For a kind served by an Ansible role instead of a chart: chartpilot new --ansible --help.`;

export interface NewOptions {
  /** Absolute path of the directory to create. */
  readonly dir: string;
  /** Absolute path of the chart, or an `oci://` reference, or a chart name in `repository`. */
  readonly chart: string;
  readonly repository?: string | undefined;
  readonly chartVersion?: string | undefined;
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly name?: string | undefined;
  readonly image?: string | undefined;
  readonly baseImage?: string | undefined;
}

export interface NewDeps {
  readonly helm: HelmRenderer;
  readonly env: Env;
  readonly warn: (line: string) => void;
  /** Where the CRD checks less than the chart's schema. */
  readonly note: (line: string) => void;
}

/** Creates the project; returns the files written, relative to `dir`. */
export async function newProject(o: NewOptions, deps: NewDeps): Promise<string[]> {
  const problems = gvkProblems(o);
  const remote = remoteChartOf(o, problems);
  const chartProblem = remote === undefined ? await checkChart(o.chart) : undefined;
  if (chartProblem !== undefined) problems.push(`--chart ${o.chart}: ${chartProblem}`);
  problems.push(...(await dirProblems(o.dir)));
  if (problems.length > 0) throw new InputError(problems);
  // A chart from a registry is pulled (and checked) first; the project names it rather than copying it.
  const chartFile = remote === undefined ? o.chart : ((await pullRemoteCharts([{ ...remoteEntry(o), remote }], deps.env))[0]?.chartPath ?? '');

  const chart = await loadChartInfo(chartFile);
  const name = o.name ?? `${chart.name.toLowerCase().replace(/[^a-z0-9-]+/gu, '-').replace(/^-+|-+$/gu, '')}-operator`;
  const deploy = {
    name,
    namespace: `${name}-system`,
    serviceAccount: name,
    image: o.image ?? `${name}:0.1.0`,
  };
  const optionProblems = deployOptionProblems(deploy).map((p) => (o.name === undefined && p.startsWith('--name') ? `${p}; pass --name` : p));
  if (o.baseImage !== undefined && (o.baseImage === '' || /\s/u.test(o.baseImage))) optionProblems.push(`--base-image "${o.baseImage}" is not an image reference`);
  if (optionProblems.length > 0) throw new InputError(optionProblems);
  // RBAC renders the chart: without helm there is nothing to write.
  await deps.helm.check();

  const chartDest = remote !== undefined ? remote.reference : (await stat(o.chart)).isDirectory() ? `charts/${chart.name}` : `charts/${basename(o.chart)}`;
  const source =
    remote === undefined
      ? { chart: chartDest }
      : { chart: o.chart, ...(o.repository === undefined ? {} : { repository: o.repository }), ...(o.chartVersion === undefined ? {} : { chartVersion: o.chartVersion }) };
  const watches = `# Each entry maps a custom resource kind to a Helm chart (operator-sdk's watches.yaml format).
${stringify([{ group: o.group, version: o.version, kind: o.kind, ...source }])}`;

  const written: string[] = [];
  try {
    await mkdir(o.dir, { recursive: true });
    await writeFile(join(o.dir, 'watches.yaml'), watches);
    written.push('watches.yaml');
    if (remote === undefined) {
      await mkdir(join(o.dir, dirname(chartDest)), { recursive: true });
      await cp(o.chart, join(o.dir, chartDest), { recursive: true, errorOnExist: true, force: false });
      written.push(`${chartDest}${chartDest.endsWith('.tgz') ? '' : '/'}`);
    }
  } catch (err) {
    throw new EnvironmentError(`cannot write to ${o.dir}: ${errorMessage(err)}`, { cause: err });
  }

  // The bundle is rendered from the project just written, so its paths are the project's own.
  const bundle = await renderBundle({ ...deploy, watchesFile: join(o.dir, 'watches.yaml'), resolver: tableResolver }, deps.env);
  for (const n of bundle.notes) deps.note(n);
  for (const w of bundle.warnings) deps.warn(w);
  const files = new Map<string, string>();
  for (const [file, text] of bundle.files) files.set(`deploy/${file}`, text);
  // Beside deploy/, not in it: `kubectl apply -R -f deploy/` must not meet a PrometheusRule (CRDs
  // of the Prometheus Operator), a rule file or a dashboard.
  for (const [file, text] of monitoringFiles(monitoringDefaults(deploy))) files.set(`monitoring/${file}`, text);
  files.set('Dockerfile', dockerfile(o.baseImage ?? defaultImage(), o.kind, remote === undefined));
  files.set('.dockerignore', `# Only watches.yaml${remote === undefined ? ' and charts/' : ''} go into the image.\n*\n!watches.yaml\n${remote === undefined ? '!charts\n' : ''}`);
  files.set('Makefile', projectMakefile({ name, namespace: deploy.namespace, image: deploy.image }));
  files.set('README.md', readme({ ...o, name, chartName: chart.name, chartDest, image: deploy.image, namespace: deploy.namespace }));
  try {
    for (const [file, text] of files) {
      await mkdir(dirname(join(o.dir, file)), { recursive: true });
      await writeFile(join(o.dir, file), text);
      written.push(file);
    }
  } catch (err) {
    throw new EnvironmentError(`cannot write to ${o.dir}: ${errorMessage(err)}`, { cause: err });
  }
  return written;
}

export async function dirProblems(dir: string): Promise<string[]> {
  let info;
  try {
    info = await stat(dir);
  } catch {
    return []; // absent: we create it
  }
  if (!info.isDirectory()) return [`${dir} exists and is not a directory; choose a new directory`];
  const entries = await readdir(dir);
  if (entries.length > 0) return [`${dir} is not empty (${entries.slice(0, 3).join(', ')}${entries.length > 3 ? ', ...' : ''}); chartpilot new only writes into a new or empty directory`];
  return [];
}

function dockerfile(baseImage: string, kind: string, localChart: boolean): string {
  return `# The ${kind} operator: chartpilot plus this repository's watches.yaml${localChart ? ' and charts' : ' (the chart is pulled from its registry at run time)'}.
# Build: docker build -t <image> .   or   buildah bud -t <image> .   (the image deploy/operator.yaml names)
FROM ${baseImage}
COPY watches.yaml ${IMAGE_HOME}/watches.yaml
${localChart ? `COPY charts/ ${IMAGE_HOME}/charts/\n` : ''}`;
}

/** The chart from a registry `new` was given, or undefined for a local chart (problems appended). */
function remoteChartOf(o: NewOptions, problems: string[]): RemoteChart | undefined {
  if (o.repository === undefined && !isOciReference(o.chart)) {
    if (o.chartVersion !== undefined) problems.push('--chart-version is for a chart from a registry (--chart oci://… or --repository); a local chart\'s version is its Chart.yaml');
    return undefined;
  }
  const fields = new Map<RemoteChartKey, Field>();
  const field = (key: RemoteChartKey, value: string | undefined): void => {
    if (value !== undefined) fields.set(key, { key, value: new Scalar(value), line: undefined });
  };
  field('repository', o.repository);
  field('chartVersion', o.chartVersion);
  const found: string[] = [];
  const remote = readRemoteChart({ chart: o.chart, fields, where: (f) => (f === undefined ? '--chart' : `--${f.key === 'chartVersion' ? 'chart-version' : f.key}`) }, found);
  problems.push(...found);
  return found.length > 0 ? undefined : remote;
}

function remoteEntry(o: NewOptions): WatchEntry {
  return {
    group: o.group, version: o.version, kind: o.kind, chartPath: '', overrideValues: {}, watchDependentResources: true,
    reconcilePeriodMs: undefined, maxConcurrentReconciles: undefined, labelSelector: undefined, dryRunOption: undefined,
    allowClusterScoped: false, allowCrossNamespace: false, serviceAccount: undefined,
  };
}

function readme(p: NewOptions & { name: string; chartName: string; chartDest: string; image: string; namespace: string }): string {
  const plural = pluralOf(p.kind);
  const metrics = metricsNames(p.name);
  return `# ${p.name}

A Kubernetes operator that serves the Helm chart \`${p.chartName}\` as the API
\`${p.kind}.${p.version}.${p.group}\`: every ${p.kind} resource is a release of the chart, its \`spec\`
being the chart's values. Generated by \`chartpilot new\` (chartpilot ${packageVersion()}).

## Layout

| path | what |
|---|---|
| \`watches.yaml\` | maps ${p.kind} to \`${p.chartDest}\` |
| \`${p.chartDest}\` | the chart |
| \`Makefile\` | the develop loop: \`make install run\`, \`deploy\`, \`generate\`, \`bundle\`, \`docker-build\` |
| \`Dockerfile\` | the operator image: chartpilot plus watches.yaml and charts/ |
| \`deploy/crds/\` | the CustomResourceDefinition; its spec schema comes from the chart's values.schema.json |
| \`deploy/rbac.yaml\` | least-privilege permissions, found by rendering the chart |
| \`deploy/operator.yaml\` | the Deployment (namespace \`${p.namespace}\`) |
| \`deploy/operator-metrics.yaml\` | the metrics Service (HTTPS on 8443, token required), who may scrape, a ServiceMonitor (commented out) |
| \`deploy/network-policy.yaml\` | only pods of namespace \`${DEFAULT_MONITORING_NAMESPACE}\` may reach the metrics port, no pod the probe port (the kubelet probes from the node); where the network plugin enforces NetworkPolicy |
| \`deploy/samples/\` | a sample ${p.kind}: its spec is the chart's values.yaml |
| \`monitoring/\` | alerts (\`prometheus-rule.yaml\` for the Prometheus Operator, \`rules.yml\` for a plain Prometheus) and a Grafana dashboard (\`grafana-dashboard.json\`): apply them where Prometheus runs; \`chartpilot generate monitoring --help\` makes them again with other settings |

${developSection('chart')}
## Build and deploy

The image is \`${p.baseImage ?? defaultImage()}\` (chartpilot: Node, helm and the operator) plus
\`watches.yaml\` and \`charts/\`. That base must be where your builder finds it: pulled from your
registry (\`--base-image\` of \`chartpilot new\` names it), or loaded from the archive chartpilot's
\`npm run image\` writes (\`docker load -i chartpilot-<version>.tar\` or \`podman load -i …\`).

\`\`\`sh
docker build -t ${p.image} .    # or: buildah bud -t ${p.image} .  (or podman build)
docker push ${p.image}          # or: buildah push ${p.image} docker://<registry>/${p.image}
                                # (your cluster must pull it: name it in deploy/operator.yaml)
kubectl apply -k deploy/        # namespace, CRD, ServiceAccount, RBAC, the operator Deployment, metrics Service
kubectl wait --for condition=established crd/${plural}.${p.group}
kubectl apply -f deploy/samples/
kubectl get ${plural} -A        # READY, REASON, REVISION, CHART
\`\`\`

The operator runs as the ServiceAccount \`${p.name}\` in \`${p.namespace}\` with the permissions of
\`deploy/rbac.yaml\` (and \`deploy/operator-metrics.yaml\`'s token and access reviews) only: non-root
(65532), no capabilities, read-only root filesystem, an \`emptyDir\` at \`/tmp\`.

## Metrics

\`/metrics\` is served over HTTPS on 8443 (a self-signed certificate unless \`--metrics-cert-path\`
names one) to bearer tokens allowed to \`get\` \`/metrics\`: bind the ClusterRole
\`${metrics.readerRole}\` to your Prometheus's ServiceAccount, and uncomment the ServiceMonitor in
\`deploy/operator-metrics.yaml\` if you run the Prometheus Operator. To look by hand:

\`\`\`sh
kubectl create serviceaccount metrics-check -n ${p.namespace}
kubectl create clusterrolebinding ${metrics.readerRole}-check --clusterrole=${metrics.readerRole} --serviceaccount=${p.namespace}:metrics-check
kubectl port-forward -n ${p.namespace} service/${metrics.service} 8443 &
curl -sk -H "Authorization: Bearer $(kubectl create token metrics-check -n ${p.namespace})" https://localhost:8443/metrics | head
\`\`\`

Try the image locally first: \`docker run --rm ${p.image} --help\` (or \`podman run …\`): its entrypoint is \`chartpilot run\`, so a container's arguments are run's flags.

## After changing the chart

Regenerate what depends on it (the CRD schema follows values.schema.json, the RBAC follows the
kinds the templates create):

\`\`\`sh
chartpilot generate all --output-dir deploy --name ${p.name} --namespace ${p.namespace} --service-account ${p.name} --image ${p.image}
\`\`\`

Run it with a cluster in your kubeconfig that serves the CRDs your chart's objects use, so their
resource names come from discovery instead of a guess (\`deploy/rbac.yaml\` flags guesses).
To confine the operator to some namespaces, set \`WATCH_NAMESPACE\` in \`deploy/operator.yaml\` and
replace \`deploy/rbac.yaml\` with \`chartpilot generate rbac --role-namespace <ns,...>\`
(\`deploy/operator-metrics.yaml\` stays: token and access reviews exist only cluster-wide).
`;
}
